"""Routing algorithms as pure functions of the votes, one module each, registered by name for `model.routing`
(`rem.routing.registry` holds the calling convention): dynamic (Sabour et al.), scaled_distance (γ-CapsNet),
self_attention (Efficient-CapsNet). `health` measures the couplings any of them produce."""

from rem.routing.common import parent_major, quantize_couplings, weighted_parents
from rem.routing.dynamic import dynamic_routing
from rem.routing.registry import (ARCHITECTURES, PARENTS, PRIOR, ROUTINGS, Routing, check_routing, own_routing,
                                  register_routing, routing_named)
from rem.routing.scaled_distance import clip_vote_lengths, scaled_distance_routing
from rem.routing.self_attention import self_attention_routing

__all__ = ["ARCHITECTURES", "PARENTS", "PRIOR", "ROUTINGS", "Routing", "check_routing", "clip_vote_lengths",
           "dynamic_routing", "own_routing", "parent_major", "quantize_couplings", "register_routing",
           "routing_named", "scaled_distance_routing", "self_attention_routing", "weighted_parents"]
