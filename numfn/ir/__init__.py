"""The IR layer: the table of primitives (primitives: the op set and each op's rules), UOp graphs (uop), the walkers
every traversal of a graph uses (walk), symbolic sizes and values (symbolic), the extern calls EXTERN nodes carry
(extern). It imports only the base modules (config, errors, dtype, debug, locks); everything above builds graphs of
it or reads them."""
