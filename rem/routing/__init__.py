"""Routing algorithms, registered by name for `model.routing`: dynamic (Sabour et al.), scaled_distance (γ-CapsNet),
self_attention (Efficient-CapsNet); `health` measures their couplings."""

from rem.routing.common import parent_major, quantize_couplings, weighted_parents
from rem.routing.dynamic import dynamic_routing
from rem.routing.registry import PARENTS, PRIOR, ROUTINGS, Routing, register_routing
from rem.routing.scaled_distance import clip_vote_lengths, scaled_distance_routing
from rem.routing.self_attention import self_attention_routing

__all__ = ["PARENTS", "PRIOR", "ROUTINGS", "Routing", "clip_vote_lengths", "dynamic_routing", "parent_major",
           "quantize_couplings", "register_routing", "scaled_distance_routing",
           "self_attention_routing", "weighted_parents"]
