"""The IR layer: UOp graphs (uop), the walkers every traversal of a graph uses (walk), symbolic sizes and values
(symbolic). It imports only the base modules (config, errors, dtype, debug, locks); everything above builds graphs
of it or reads them."""
