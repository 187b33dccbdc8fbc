"""A model family registers once, with its routing and roles (`rem.models.register_model`), and a routing once
(`rem.routing.register_routing`): no map elsewhere repeats a name (that the registries load every registering
module: tests/test_registry_lists.py)."""

from __future__ import annotations

import pytest

from rem.models import create_model
from rem.models.registry import default_routing, family_roles, has_routing
from rem.models.roles import roles_of
from rem.routing import ROUTINGS
from tests.models.test_routing_choice import SMALL


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
