"""A model family registers once, with its routing and roles (`rem.models.register_model`), and a routing once
(`rem.routing.register_routing`): no map elsewhere repeats a name. Each package's `__init__` imports the modules that
register, so what the registries hold and what the decorators in those modules say must agree: a module the package
forgot to import would register nothing, and a name listed nowhere but a decorator is the only place it is named."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import rem.models
import rem.routing
from rem.models import create_model
from rem.models.registry import MODELS, default_routing, family_roles, has_routing
from rem.models.roles import roles_of
from rem.routing import ROUTINGS
from tests.models.test_routing_choice import SMALL


def decorated_names(package, decorator: str) -> dict[str, str]:
    """name -> module, for every `@decorator("name", ...)` in the package's modules."""
    found = {}
    for path in sorted(Path(package.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == decorator and node.args:
                if isinstance(node.args[0], ast.Constant):
                    found[node.args[0].value] = f"{package.__name__}.{path.stem}"
    return found


def imported_modules(package) -> set[str]:
    """The package's own modules its `__init__` imports."""
    tree = ast.parse(Path(package.__file__).read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == package.__name__:
            out |= {f"{package.__name__}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(package.__name__ + "."):
            out.add(node.module)
    return out


@pytest.mark.parametrize(("package", "registry", "decorator"), [
    (rem.models, MODELS, "register_model"), (rem.routing, ROUTINGS, "register_routing")])
def test_the_package_imports_every_registering_module_and_the_registry_holds_what_the_decorators_say(
        package, registry, decorator):
    decorated = decorated_names(package, decorator)
    assert set(decorated.values()) <= imported_modules(package), "a registering module the package never imports"
    built_in = [name for name in registry.names() if name in decorated]
    assert sorted(built_in) == sorted(decorated)


@pytest.mark.parametrize("name", list(SMALL))
def test_a_model_gets_its_roles_and_routing_from_its_one_registration(name):
    model = create_model(name, in_shape=(1, 28, 28), num_classes=10, **SMALL[name])
    assert roles_of(model) is family_roles(name)
    assert not hasattr(type(model), "roles")  # declared once, at registration, not again on the class
    assert model.routing == ROUTINGS.get(default_routing(name))
    for tensor in family_roles(name).class_capsule_matrices:
        assert tensor in dict(model.named_parameters()), tensor


def test_a_cnn_registers_no_routing():
    assert not has_routing("cnn_sabour") and default_routing("cnn_sabour") is None
