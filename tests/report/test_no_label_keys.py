"""House rule: no reader of the results decides by an arm's label text.

An arm's label ("plain", "+Q", "+REM λ×100", "+CAPS 25%", "LOBSTER (no threshold)") is rendered in one place,
`rem.results.arms.Arm` (its family, its method's `presentation`, and its settings' texts). Whatever decides which arm
a row is -- the paper's +Q, an unpruned arm, a capsule-pruned one, its figure marker -- asks the Arm (`arm == PLUS_Q`,
`arm.unpruned`, `arm.method == CapsuleTypes.name`, `arm.marker`), and a frame's rows of one arm are found by its key
(`frame["arm_key"] == arm.key`): a comparison with label text breaks without a sound the day a label or a method's
naming changes.

Scope: every module under rem/report and rem/results, parsed, so docstrings, comments and the text of f-strings
are never read as code. A label literal is a string that is "plain", starts with "plain ", "LOBSTER" or "+" and a
capital, or an f-string that starts so. Flagged:
- a comparison (==, !=, in, not in, is, is not) or a `match` case with, on one side, a label literal, a tuple, list
  or set holding one, or a module-level name bound to such a collection (`UNPRUNED = ("plain", "+Q")`, then
  `v in UNPRUNED`); `.startswith`, `.endswith` or `.isin` called with one;
- a lookup by label: a subscript or `.get` with a label literal or a tuple holding one (`seeds[(d, m, "+Q")]`), or
  into a module-level dict whose keys are label literals (`MARKERS = {"+REM": "*"}`, then `MARKERS.get(v)`);
- a label literal passed as the `variant` argument of a function defined in scope (`arm_drop(points, m, "+Q")`),
  which then compares it;
- the label column itself compared, `.isin`-tested or grouped by (`frame["variant"] == v`, `groupby([..., "variant"])`):
  rows of an arm are selected, grouped and joined by `arm_key`.
Not flagged: a label literal as a dict key of a value built and handed on, as a default, as display text (the
forward "+Q" in a table cell, a legend's `label`), or a module-level name bound to one string (`QUANTIZED = "+Q"`
names a forward, not an arm) -- none of these decides by a label. What a label reaches through a variable, a call
into another package or a dict built at run time is beyond what this test reads.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import REPO

SCOPE = ("rem/report", "rem/results")
LABEL = re.compile(r"^(?:plain$|plain |LOBSTER|\+[A-Z])")
COMPARING = (ast.Eq, ast.NotEq, ast.In, ast.NotIn, ast.Is, ast.IsNot)
TEXT_TESTS = frozenset({"startswith", "endswith", "isin"})
COLLECTIONS = (ast.Tuple, ast.List, ast.Set)


def is_label(node: ast.AST) -> bool:
    if isinstance(node, ast.JoinedStr):  # f"+IMP {target}%": its leading text
        return bool(node.values) and is_label(node.values[0])
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and bool(LABEL.match(node.value))


def label_collection(node: ast.AST) -> bool:
    """A tuple, list or set display holding a label literal, or one passed to frozenset/set/tuple/list."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in {"frozenset", "set", "tuple",
                                                                                           "list"}:
        return any(label_collection(a) for a in node.args)
    return isinstance(node, COLLECTIONS) and any(is_label(e) for e in node.elts)


def bound_at_top(tree: ast.Module, wanted) -> set[str]:
    """Module-level names whose assigned value `wanted` accepts."""
    names = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) \
            else []
        if getattr(node, "value", None) is not None and wanted(node.value):
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def label_names(tree: ast.Module) -> set[str]:
    """Module-level names bound to a collection of label literals."""
    return bound_at_top(tree, label_collection)


def label_maps(tree: ast.Module) -> set[str]:
    """Module-level names bound to a dict keyed by label literals."""
    return bound_at_top(tree, lambda value: isinstance(value, ast.Dict) and any(k is not None and is_label(k)
                                                                                  for k in value.keys))


def variant_parameters(tree: ast.Module) -> dict[str, list[str]]:
    """Function name -> its positional parameters, for every function with a `variant` parameter."""
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
            if "variant" in params or any(a.arg == "variant" for a in node.args.kwonlyargs):
                found[node.name] = params
    return found


def named(node: ast.AST, names) -> bool:
    return (isinstance(node, ast.Name) and node.id in names) or (isinstance(node, ast.Attribute) and node.attr in names)


def holds_labels(node: ast.AST, names) -> bool:
    return is_label(node) or label_collection(node) or named(node, names)


def keyed_by_label(node: ast.AST) -> bool:
    return is_label(node) or (isinstance(node, ast.Tuple) and any(is_label(e) for e in node.elts))


def callee(node: ast.Call) -> str | None:
    return node.func.id if isinstance(node.func, ast.Name) else node.func.attr if isinstance(node.func, ast.Attribute) \
        else None


def variant_argument(node: ast.Call, functions: dict[str, list[str]]) -> bool:
    """A label literal passed as the `variant` parameter of a function defined in scope."""
    params = functions.get(callee(node) or "")
    if params is None:
        return False
    if isinstance(node.func, ast.Attribute) and params[:1] in (["self"], ["cls"]):
        params = params[1:]  # a method called on its object
    passed = [*zip(params, node.args), *((k.arg, k.value) for k in node.keywords)]
    return any(name == "variant" and is_label(value) for name, value in passed)


LABEL_COLUMN = "variant"


def label_column(node: ast.AST) -> bool:
    """`frame["variant"]`, also with methods called on it (`.astype(str)`): the label column."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        node = node.func.value
    return isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value == LABEL_COLUMN


def names_label_column(node: ast.AST) -> bool:
    """"variant", a collection holding it, or the column itself: what a `groupby` would group by label."""
    if isinstance(node, COLLECTIONS):
        return any(names_label_column(e) for e in node.elts)
    return (isinstance(node, ast.Constant) and node.value == LABEL_COLUMN) or label_column(node)


def call_offends(node: ast.Call, scope: Scope) -> bool:
    arguments = (*node.args, *(k.value for k in node.keywords))
    name = callee(node)
    if name == "isin" and isinstance(node.func, ast.Attribute) and label_column(node.func.value):
        return True
    if name == "groupby":
        return any(names_label_column(a) for a in arguments)
    if name in TEXT_TESTS:
        return any(holds_labels(a, scope.names) for a in arguments)
    if name == "get" and isinstance(node.func, ast.Attribute):
        return named(node.func.value, scope.maps) or any(keyed_by_label(a) for a in node.args[:1])
    return variant_argument(node, scope.functions)


@dataclass
class Scope:
    """What the modules in scope define that a comparison may reach by name."""
    names: set[str] = field(default_factory=set)  # collections of label literals
    maps: set[str] = field(default_factory=set)  # dicts keyed by label literals
    functions: dict[str, list[str]] = field(default_factory=dict)  # functions with a `variant` parameter

    def add(self, tree: ast.Module) -> "Scope":
        self.names |= label_names(tree)
        self.maps |= label_maps(tree)
        self.functions.update(variant_parameters(tree))
        return self


def offends(node: ast.AST, scope: Scope) -> bool:
    if isinstance(node, ast.Compare):
        return any(isinstance(op, COMPARING) for op in node.ops) and \
            any(holds_labels(side, scope.names) or label_column(side) for side in (node.left, *node.comparators))
    if isinstance(node, ast.Call):
        return call_offends(node, scope)
    if isinstance(node, ast.Subscript):
        return keyed_by_label(node.slice) or named(node.value, scope.maps)
    return isinstance(node, ast.MatchValue) and is_label(node.value)


def offences(source: str, scope: Scope | None = None) -> list[int]:
    """Line numbers of every decision by label in `source` (`scope`: what the other modules in scope define)."""
    tree = ast.parse(source)
    scope = Scope().add(tree) if scope is None else scope
    return sorted({node.lineno for node in ast.walk(tree) if offends(node, scope)})


def modules() -> list[Path]:
    return sorted(p for folder in SCOPE for p in (REPO / folder).rglob("*.py"))


def test_no_module_compares_an_arm_label_with_a_literal():
    texts = {path: path.read_text() for path in modules()}
    scope = Scope()
    for text in texts.values():  # what one module defines, another may import
        scope.add(ast.parse(text))
    found = [f"{path.relative_to(REPO)}:{line}" for path, text in texts.items() for line in offences(text, scope)]
    assert not found, ("label text compared instead of asking the arm (rem.results.arms.Arm):\n" + "\n".join(found))


def test_the_rule_sees_each_kind_of_label_comparison():
    flagged = '''
UNPRUNED = ("plain", "+Q")
a = v == "+Q"
b = "plain" != v
c = v in ("plain", "+Q")
d = v in UNPRUNED
e = r.variant.startswith("+CAPS")
f = frame["variant"].isin(["+REM", "+IMP 50%"])
g = v == f"+IMP {target:g}%"
h = v not in frozenset({"LOBSTER (no threshold)"})
match v:
    case "+REM":
        pass
MARKERS = {"plain": "o", "+REM": "*"}
i = MARKERS.get(v)
j = seeds[(dataset, model, "+Q")]
def arm_drop(points, model, variant, family): ...
k = arm_drop(points, model, "+Q", family)
m = arm_drop(points, model, variant="plain", family=f)
n = frame[frame["variant"] == variant]
o = frame["variant"].astype(str).isin(wanted)
p = frame.groupby(["model.name", "variant"]).size()
'''
    assert offences(flagged) == [3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 16, 18, 19, 20, 21, 22]


def test_the_rule_leaves_text_that_compares_nothing():
    left = '''
"""A docstring naming "+Q" and "plain" == "plain"."""
# v == "+Q" in a comment
QUANTIZED = "+Q"  # a forward's name
COUPLING = {"+Q": 3.32, "plain": 3.30}  # built and handed on, never looked up here
row = [f"{model} +Q vs {cnn}", "+Q", "plain (final evaluation)"]
drop(points, "+Q", family)
band(ax, group, metric, colour, label="+Q")
a = arm == PLUS_Q
b = column.startswith("plain/")
c = name == "plainly"
d = frame[frame["arm_key"] == arm.key].groupby(["model.name", "arm_key"]).size()
row = [m, frame["variant"].iloc[0]]
'''
    assert offences(left) == []
