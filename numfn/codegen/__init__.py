"""Code generation: lowering kernels to loops, NumPy semantics in machine ops, linearization."""
