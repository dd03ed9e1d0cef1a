"""numfn/ is clean under mypy with the project's settings ([tool.mypy] in pyproject.toml), and ships py.typed."""
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_package_is_marked_typed():
    assert (ROOT / "numfn" / "py.typed").is_file()


def test_mypy_is_clean(mypy_result):
    status, output = mypy_result   # (tests/conftest.py starts mypy when collection ends, to run beside other tests)
    assert status == 0, "mypy found type errors in numfn/:\n" + output


def _declared_methods() -> dict:
    """The methods Tensor declares for type checkers only (its `if TYPE_CHECKING:` block), as plain functions with
    the declared parameters (annotations dropped)."""
    import ast
    tree = ast.parse((ROOT / "numfn" / "trace" / "tensor.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    block = next(n for n in cls.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    out = {}
    for f in block.body:
        if not isinstance(f, ast.FunctionDef): continue
        f.decorator_list, f.returns = [], None
        for a in (*f.args.posonlyargs, *f.args.args, *f.args.kwonlyargs, f.args.vararg, f.args.kwarg):
            if a is not None: a.annotation = None
        namespace: dict = {}
        exec(compile(ast.fix_missing_locations(ast.Module([f], [])), "<declared>", "exec"), namespace)
        out[f.name] = namespace[f.name]
    return out


def test_declared_tensor_methods_match_the_registered_ones():
    """The ndarray methods numfn.numpy and numfn.trace.subscript add to Tensor at import (tensor_method) are declared in
    Tensor for checkers: every one of them, each with the parameters (names, kinds, defaults) of what runs."""
    import inspect

    import numfn  # noqa: F401 - registers the methods
    from numfn.trace.tensor import Tensor

    def params(fn):
        ps = list(inspect.signature(fn).parameters.values())[1:]   # self (named `a` in some implementations)
        return [(p.name, p.kind, p.default) for p in ps]

    declared = _declared_methods()
    registered = {}
    for name, value in vars(Tensor).items():
        fn = value.fget if isinstance(value, property) else value
        if callable(fn) and getattr(fn, "__module__", "numfn.trace.tensor") != "numfn.trace.tensor":
            registered[name] = fn
    assert {"__getitem__", "__setitem__", "argmax", "sort", "mT"} <= set(registered)
    assert sorted(registered) == sorted(declared)
    for name, fn in registered.items():
        assert params(declared[name]) == params(fn), name
