"""Issue 45 item 8: the installed package ships type stubs (`_ratchetdb.pyi`) and the
`py.typed` marker, and the stubs name every public class, function, method and attribute
the extension has (and nothing it lacks)."""

import ast
import inspect
import pathlib

import ratchetdb
import ratchetdb._ratchetdb as extension

PACKAGE = pathlib.Path(ratchetdb.__file__).parent
# Dunder methods the stubs must declare where the runtime class has them.
PROTOCOL = {"__enter__", "__exit__", "__len__", "__iter__", "__next__", "__int__", "__bool__"}


def stub_classes():
    tree = ast.parse((PACKAGE / "_ratchetdb.pyi").read_text())
    classes, functions = {}, set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names = set()
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names.add(item.target.id)
            # Members declared on a base class in the stub are the subclass's too.
            for base in node.bases:
                if isinstance(base, ast.Name) and base.id in classes:
                    names |= classes[base.id]
            classes[node.name] = names
        elif isinstance(node, ast.FunctionDef):
            functions.add(node.name)
    return classes, functions


def public(cls):
    own = set()
    for name in dir(cls):
        if name.startswith("__") and name not in PROTOCOL:
            continue
        if name in dir(Exception) and issubclass(cls, BaseException):
            continue
        own.add(name)
    return own


def test_the_installed_package_has_py_typed_and_the_stub():
    assert (PACKAGE / "py.typed").is_file()
    assert (PACKAGE / "_ratchetdb.pyi").is_file()


def test_the_stub_covers_every_public_name_and_member():
    classes, functions = stub_classes()
    for name in ratchetdb.__all__:
        value = getattr(extension, name)
        if inspect.isclass(value):
            assert name in classes, f"{name} has no stub"
            runtime = public(value)
            if issubclass(value, BaseException):
                runtime -= {"field", "problem"}  # set on instances; declared where they exist
            assert runtime <= classes[name], f"{name}: no stub for {sorted(runtime - classes[name])}"
            declared = {n for n in classes[name] if not n.startswith("__") or n in PROTOCOL}
            if not issubclass(value, BaseException):
                assert declared <= runtime, f"{name}: stubs for missing {sorted(declared - runtime)}"
        else:
            assert name in functions, f"{name} has no stub"


def test_the_stub_signatures_name_the_runtime_parameters():
    tree = ast.parse((PACKAGE / "_ratchetdb.pyi").read_text())
    store = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Store")
    for method in store.body:
        if not isinstance(method, ast.FunctionDef) or method.name.startswith("__"):
            continue
        runtime = getattr(ratchetdb.Store, method.name)
        if isinstance(runtime, property) or not callable(runtime):
            continue
        stub_params = [a.arg for a in method.args.args + method.args.kwonlyargs][1:]
        signature = inspect.signature(runtime)
        assert stub_params == [p for p in signature.parameters if p != "self"], method.name
