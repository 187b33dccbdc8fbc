"""The studies' descriptions (pipeline/studies/*/README.md) and README.md state each published claim with the verdict
its page's table gives.

The pages' tables are rendered from the committed Parquets, so they are the truth; the prose is written by hand and
drifts when a page is re-rendered (a claim that Holm's correction made undecided left "supported", a pruned arm's
"fewer parameters" left "supported" once the rule said "by construction").

How a sentence is matched to a claim: MENTIONS names each claim by its table, arm and claim text, and gives, per
doc, phrases (regular expressions) that find the doc's sentence or table cell about it. Free text cannot be matched
to a claim reliably, so the map is written by hand, and a phrase that no longer matches fails rather than passing
silently. For every match, the verdict word nearest the phrase within its sentence (or cell), in its own clause
where that has one, must be the table's: "undecided (...)" counts as undecided, "not tested: at ceiling" as not
tested, and so on.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.conftest import REPO

REPORTS = REPO / "reports"
# each doc's files: the studies' descriptions, one in each study's folder, read as one text
DOCS = {"studies": sorted((REPO / "pipeline" / "studies").glob("*/README.md")), "readme": [REPO / "README.md"]}
# The study pages' tables (reports/<study>/tables, reports/evidence/<study>/tables); the main job's
# reports/tables/, which `dvc repro` writes in any checkout, is no published page.
TABLE_GLOBS = ("*/tables/*.md", "evidence/*/tables/*.md")

# Longer words first where one holds another: "not supported" must not read as "supported".
# "testable": a measurement's word (DeepCaps' routing page): no claim tested, every precondition for testing it holds.
VERDICTS = ("no verdict", "not supported", "not tested", "by construction", "supported", "undecided", "testable")
# "supported alone at p = ..." is the test Holm's correction overruled, inside an undecided verdict: not a verdict.
VERDICT_WORD = re.compile(r"\b(?:" + "|".join(VERDICTS) + r")\b(?!\s+alone)", re.I)
ARM_COLUMNS = ("Arm", "Arms", "Setting", "Model")  # the curve tables name the arm in the question itself
CLAIM_COLUMNS = ("Claim", "Question", "Endpoint", "Measure")  # a confirmatory page names its endpoint
NO_CLAIM = "–"  # a descriptive row of a verdict table ("what the lower entropy is made of")

UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")
SEPARATOR_ROW = re.compile(r"\|(\s*:?-+:?\s*\|)+")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
# A sentence ends at . ! or ? before a space and anything but a lower-case letter; "e.g." and "et al." do not end one.
SENTENCE_END = re.compile(r"(?<=[.!?])(?<!e\.g\.)(?<!i\.e\.)(?<!al\.)\s+(?=[^\sa-z])")
LIST_ITEM = re.compile(r"\s*(?:[-*] |\d+\. )")


def verdict_of(text: str) -> str:
    """The verdict word a table cell starts with, in lower case."""
    match = re.match("|".join(VERDICTS), text.strip(), re.I)
    assert match, f"not a verdict: {text[:80]!r}"
    return match.group(0).lower()


def cells(line: str) -> list[str]:
    """A table row's cells, with the pipes a cell escapes ("\\|difference\\|") put back."""
    return [cell.strip().replace("\\|", "|") for cell in UNESCAPED_PIPE.split(line.strip())[1:-1]]


def markdown_tables(text: str) -> Iterator[list[dict[str, str]]]:
    """Each table of a Markdown text as its rows, a mapping from header to cell."""
    lines = text.splitlines()
    for at, line in enumerate(lines[:-1]):
        if line.startswith("|") and SEPARATOR_ROW.fullmatch(lines[at + 1].strip()):
            header, rows = cells(line), []
            for body in lines[at + 2:]:
                if not body.startswith("|"):
                    break
                rows.append(dict(zip(header, cells(body))))
            yield rows


@dataclass(frozen=True)
class Claim:
    label: str  # how a failure names it
    table: str  # its table file, relative to reports/
    arm: str  # the table's arm cell; "" where the table has none
    claim: str  # the table's claim (or question) cell, exactly


def verdict_cells() -> dict[tuple[str, str, str], list[str]]:
    """(table, arm, claim) -> the Verdict cells of the rows that state it, over every study page's tables."""
    found: dict[tuple[str, str, str], list[str]] = {}
    for pattern in TABLE_GLOBS:
        for path in sorted(REPORTS.glob(pattern)):
            for rows in markdown_tables(path.read_text()):
                for row in rows:
                    if "Verdict" not in row:
                        break  # not a verdict table
                    arm = next((row[c] for c in ARM_COLUMNS if c in row), "")
                    claim = next((row[c] for c in CLAIM_COLUMNS if c in row), None)
                    assert claim is not None, f"{path}: a verdict table without a {' or '.join(CLAIM_COLUMNS)} column"
                    key = (str(path.relative_to(REPORTS)), arm, claim)
                    found.setdefault(key, []).append(row["Verdict"])
    return found


def segments(text: str) -> list[str]:
    """The text's sentences and table cells, each on one line: a verdict word speaks for the claim it stands beside
    only within one of them."""
    out: list[str] = []
    for block in re.split(r"\n\s*\n", FENCE.sub("", text)):
        prose: list[list[str]] = [[]]
        for line in block.splitlines():
            if line.startswith("|"):
                out.extend(cells(line))
                continue
            if LIST_ITEM.match(line):  # a list item starts afresh, whatever the line before ended with
                prose.append([])
            prose[-1].append(line.strip())
        out.extend(sentence for item in prose for sentence in SENTENCE_END.split(" ".join(item)) if sentence)
    return out


def clause_around(segment: str, phrase: re.Match) -> range:
    """Where the clause holding `phrase` lies: between the semicolons on either side of it that stand outside any
    brackets ("(3.3218 against 3.3210 bits; not supported)" is one clause)."""
    depth, cuts = 0, [-1, len(segment)]
    for at, char in enumerate(segment):
        depth += (char in "([") - (char in ")]")
        if char == ";" and depth <= 0:
            cuts.append(at)
    return range(max(c for c in cuts if c < phrase.start()) + 1, min(c for c in cuts if c >= phrase.end()))


def nearest_verdict(segment: str, phrase: re.Match) -> str | None:
    """The verdict word closest to `phrase`, counted in characters between them: in the phrase's own clause if it
    has one, since a sentence often lists several claims a clause each, else anywhere in `segment`."""
    def gap(word: re.Match) -> int:
        return max(word.start() - phrase.end(), phrase.start() - word.end(), 0)

    words = list(VERDICT_WORD.finditer(segment))
    clause = clause_around(segment, phrase)
    own = [word for word in words if word.start() in clause]
    return min(own or words, key=gap).group(0).lower() if words else None


CLAIMS_TABLE = {  # the tables, by study
    "evidence": "evidence/tables/claims.md",
    "horizon": "evidence/horizon/tables/claims.md",
    "horizon curve": "evidence/horizon/tables/curve_efficient_capsnet.md",
    "γ horizon": "evidence/horizon-gamma/tables/claims.md",
    "γ curve": "evidence/horizon-gamma/tables/curve_gamma_capsnet.md",
    "routing": "routing/tables/verdicts.md",
    "claims": "claims/tables/claims.md",
    "γ confirmatory": "evidence/confirm-gamma/tables/primary.md",
    "deepcaps": "evidence/deepcaps-routing/tables/testable.md",
}
ENTROPY = "REM strongly reduces the number of intra-class parse trees (lower routing entropy)"
FEWER = "... with fewer parameters"
ACCURACY = "... and negligible accuracy loss (margin 1 point)"
PAIRED = f"{ENTROPY}: both arms at their last epoch (5), paired by seed (after the data were seen)"
SCOPES = ("every REM tensor", "W only", "primary conv only")
COUPLINGS = "couplings further from uniform than published (coupling entropy lower)"
NO_WORSE = "accuracy no worse than published (margin 1 point)"
TRANSFORMS = ("Rotation ±30°", "Rotation ±60°", "Scale 0.8", "Shear ±0.2", "Shift ±4 px", "affNIST-style affine")
ROBUST_CNN = ("Capsules lose less accuracy than a CNN of the same size under geometric change they were not trained "
              "on: ")
ROBUST_REM = "REM-pruned capsules stay as robust as the unpruned model (REM's summaries; margin 1 point): "
EQUIVARIANT = ("Capsule poses transform more predictably than a CNN's features of the same width (held-out linear "
               "map): ")
PAIRS = "Capsules recognise both of two overlapping objects better than a CNN of the same size (Sabour et al.)"
FAN_IN = "capsnet +Q (decoder) · vote_init_fan_in=true vs cnn_matched"


def claim(study: str, arm: str, text: str, label: str = "") -> Claim:
    return Claim(f"{study}: {label or text[:60]}", CLAIMS_TABLE[study], arm, text)


def curve(study: str, arm: str, scope: str) -> Claim:
    """A mechanism curve's row: the arm is in its question, the table has no arm column."""
    return claim(study, "", f"{arm}: sparsity at which the entropy starts to fall, pruning {scope}", f"{arm}, {scope}")


def mention(*claims: Claim, **phrases: str | tuple[str, ...]) -> list[tuple[Claim, str, str]]:
    """Each claim with each doc's phrases (`studies=`, `readme=`) that find where the doc states it."""
    return [(c, doc, phrase) for c in claims for doc, found in phrases.items()
            for phrase in ((found,) if isinstance(found, str) else found)]


def both(phrase: str) -> dict[str, str]:
    """The same phrase in docs/studies.md and README.md, for `mention(..., **both(phrase))`."""
    return {"studies": phrase, "readme": phrase}


REM_ACCURACY = claim("evidence", "capsnet +REM", ACCURACY, "+REM accuracy")
W_ONLY_ACCURACY = claim("evidence", "capsnet +REM W only", ACCURACY, "W only accuracy")
PUBLISHED_PAIRS = claim("claims", "capsnet +Q (decoder) vs cnn_matched (multifashion)", PAIRS, "MultiFashion pairs")
FAN_IN_MNIST = claim("claims", f"{FAN_IN} (multimnist-halves)", PAIRS, "MultiMNIST pairs, vote_init_fan_in")

CONFIRM_ENDPOINT = ("γ-CapsNet: the mean paired difference +REM - +Q in REM's entropy (K = 6) on all 10,000 test "
                    "images at the last of 5 epochs, lower than 0 (one-sided paired t, alpha 0.05, looks at 6 and 12 "
                    "pairs)")

MENTIONS = [
    # the confirmatory γ-CapsNet study: its primary endpoint by the committed rule
    *mention(claim("γ confirmatory", "", CONFIRM_ENDPOINT, "primary endpoint"),
             studies=r"Where it stands",
             readme=(r"parse-tree claim \(K = 6\) \*\*not tested: γ-CapsNet", r"in the confirmatory study")),
    # DeepCaps' routing: whether REM's entropy claim is testable on it (a measurement's verdict)
    *mention(claim("deepcaps", "deepcaps +Q", "REM's entropy claim testable at this budget", "testable"),
             studies=r"claim is \*\*not tested\*\* on DeepCaps",
             readme=(r"claim \*\*not tested\*\* on DeepCaps", r"\*\*DeepCaps\*\*")),
    # γ-CapsNet horizon: the primary endpoint, its secondary claims, the paired read-out, the mechanism curves
    *mention(claim("γ horizon", "gamma_capsnet +REM", ENTROPY, "entropy (primary)"),
             studies=r"\[-0\.73, \+0\.33\]", readme=(r"8\.58 ± 0\.22", r"\*\*γ-CapsNet\*\*")),
    *mention(claim("γ horizon", "gamma_capsnet +REM", ACCURACY, "accuracy"),
             **both(r"88\.86 against 88\.94")),
    *mention(claim("γ horizon", "gamma_capsnet +REM", FEWER, "fewer parameters"), studies=r"38\.9 ± 6\.5"),
    *mention(claim("γ horizon", "gamma_capsnet +REM", PAIRED, "paired at the last epoch"),
             studies=r"-0\.329 \[-0\.591, -0\.067\]"),
    *mention(curve("γ curve", "gamma_capsnet +Q", "every REM tensor"),
             **both(r"rises from 40 %")),
    *mention(curve("γ curve", "gamma_capsnet +Q", "primary conv only"), studies=r"from 60 % on its primary"),
    *mention(curve("γ curve", "gamma_capsnet +Q", "W only"),
             *(curve("γ curve", arm, scope) for arm in ("gamma_capsnet +REM", "gamma_capsnet +IMP@REM")
               for scope in SCOPES),
             studies=r"every scope of \+REM and IMP"),
    # Efficient-CapsNet horizon
    *mention(claim("horizon", "efficient_capsnet +REM", ENTROPY, "entropy (primary)"),
             studies=r"0\.997 distinct", readme=(r"0\.997 distinct", r"\*\*Efficient-CapsNet\*\*")),
    *mention(claim("horizon", "efficient_capsnet +REM", ACCURACY, "accuracy"),
             **both(r"91\.35 against 91\.11")),
    *mention(claim("horizon", "efficient_capsnet +REM", FEWER, "fewer parameters"), studies=r"32\.7 ± 7\.2"),
    *mention(*(curve("horizon curve", arm, scope) for arm in ("efficient_capsnet +Q", "efficient_capsnet +REM")
               for scope in SCOPES),
             **both(r"lowers the entropy only where accuracy is lost")),
    # CapsNet evidence
    *mention(claim("evidence", "capsnet +REM", FEWER, "+REM fewer parameters (36.5 %)"),
             **both(r"36\.5")),
    *mention(REM_ACCURACY, studies=r"80\.22 against 79\.76", readme=r"accuracy of \+REM and of \+REM on W only"),
    *mention(W_ONLY_ACCURACY, studies=r"W alone prunes only 4-16 % of W",
             readme=r"accuracy of \+REM and of \+REM on W only"),
    *mention(claim("evidence", "capsnet", "+REM W only's accuracy no worse than +IMP@REM W only's (margin 1 point; "
                   "the same sparsity by magnitude: not pruning alone)", "W only accuracy against IMP"),
             studies=r"(?i)against IMP at the same W sparsity"),
    *mention(claim("evidence", "capsnet +REM", ENTROPY, "+REM entropy"),
             studies=r"every entropy claim", readme=(r"on CapsNet: the couplings stay uniform", r"\*\*CapsNet\*\*")),
    *mention(*(claim("evidence", arm, ENTROPY, f"{arm} entropy") for arm in ("capsnet +REM W only",
                                                                             "capsnet +REM λ×100")),
             studies=r"every entropy claim"),
    *mention(*(claim("evidence", "capsnet", f"{arm}: couplings more polarised (coupling entropy lower)")
               for arm in ("+REM λ×100", "LOBSTER λ×100 (no threshold)")),
             studies=r"3\.3218 against 3\.3210"),
    # the routing regime
    *mention(claim("routing", "+Q · agreement_scale=3", COUPLINGS, "agreement × 3 couplings"),
             studies=r"× 3 moves them most"),
    *mention(claim("routing", "+Q · agreement_scale=3", NO_WORSE, "agreement × 3 accuracy"),
             studies=r"destabilises training"),
    *mention(claim("routing", "+Q · warmup_steps=200", NO_WORSE, "warm-up accuracy"), studies=r"87\.2"),
    *mention(claim("routing", "+Q · warmup_steps=200", COUPLINGS, "warm-up couplings"),
             studies=r"slightly closer to uniform"),
    *mention(*(claim("routing", arm, COUPLINGS, f"{arm} couplings") for arm in (
        "+Q · routing_bias_init=0", "+Q · lr=0.003", "+Q · batch_size=32, max_steps_per_epoch=200")),
             studies=r"routing bias of 0"),
    *mention(*(claim("routing", f"+Q · {setting}", COUPLINGS, f"{setting} couplings") for setting in (
        "agreement_scale=3", "routing_bias_init=0", "lr=0.003", "batch_size=32, max_steps_per_epoch=200",
        "vote_init_fan_in=true", "warmup_steps=200")),
             readme=r"every coupling verdict"),
    # the capsule claims
    *mention(claim("claims", "capsnet 1 vs 3 iterations", "Routing by agreement needs its iterations: 1 (a single "
                   "softmax, no feedback) is worse than 3", "1 vs 3 iterations"),
             claim("claims", "capsnet 5 vs 3 iterations", "Beyond 3 iterations little is gained (at most 1 point) "
                   "while the cost grows", "5 vs 3 iterations"),
             *(claim("claims", "capsnet +REM vs +Q", ROBUST_REM + t, f"+REM robust: {t}") for t in TRANSFORMS),
             **both(r"(?i)every routing claim")),
    *mention(claim("claims", "capsnet +Q vs cnn_matched", ROBUST_CNN + "Rotation ±60°", "robustness: ±60°"),
             studies=r"±60° rotation", readme=r"±60°"),
    *mention(claim("claims", f"{FAN_IN} (multifashion)", PAIRS, "MultiFashion pairs, vote_init_fan_in"),
             **both(r"learns the MultiFashion pairs")),
    *mention(FAN_IN_MNIST, studies=r"on MultiMNIST, in the 140 steps", readme=r"where CapsNet did not learn them"),
    *mention(PUBLISHED_PAIRS, studies=r"CapsNet as published does not learn them",
             readme=r"where CapsNet did not learn them"),
    *mention(claim("claims", "capsnet decoder vs none", "The reconstruction decoder helps (a regulariser, Sabour et "
                   "al.)", "decoder"),
             claim("claims", "capsnet shared vs per-capsule votes", "Vote matrices shared across the grid per capsule "
                   "type lose nothing against one per primary capsule (margin 1 point)", "shared votes"),
             *(claim("claims", "capsnet +Q vs cnn_matched", ROBUST_CNN + t, f"robustness: {t}") for t in TRANSFORMS
               if t != "Rotation ±60°"),
             *(claim("claims", "capsnet +Q vs cnn_matched", EQUIVARIANT + t, f"equivariance: {t}")
               for t in TRANSFORMS if t != "affNIST-style affine"),
             **both(r"(?i)every other claim")),
]


@pytest.fixture(scope="module")
def tables() -> dict[tuple[str, str, str], list[str]]:
    return verdict_cells()


@pytest.fixture(scope="module")
def doc_segments() -> dict[str, list[str]]:
    return {doc: segments("\n\n".join(path.read_text() for path in paths)) for doc, paths in DOCS.items()}


@pytest.mark.parametrize(("claim", "doc", "phrase"), MENTIONS,
                         ids=[f"{doc}: {c.label} [{phrase}]" for c, doc, phrase in MENTIONS])
def test_the_docs_state_each_claim_with_its_tables_verdict(claim, doc, phrase, tables, doc_segments):
    rows = tables.get((claim.table, claim.arm, claim.claim), [])
    assert len(rows) == 1, f"{claim.table}: {len(rows)} rows for {claim.arm!r} / {claim.claim!r} (expected one)"
    truth = verdict_of(rows[0])
    found = [(segment, match) for segment in doc_segments[doc] for match in re.finditer(phrase, segment)]
    assert found, f"{doc} no longer has {phrase!r}: update MENTIONS to where it states this claim"
    for segment, match in found:
        said = nearest_verdict(segment, match)
        assert said == truth, (f"{doc} says {said!r} where {claim.table} says {truth!r} "
                               f"({rows[0][:100]}): {segment[:400]}")


def test_every_verdict_on_the_pages_is_one_of_the_words(tables):
    """The words the docs are held to are all the pages use, so a new verdict cannot slip past the map unread."""
    assert len(tables) > 50  # every study page's verdict tables were found
    for verdicts in tables.values():
        for verdict in verdicts:
            if verdict != NO_CLAIM:
                verdict_of(verdict)


def test_the_verdict_nearest_a_phrase_is_the_one_that_speaks_for_it():
    # "bias of 0" stands 2 characters after the warm-up's verdict and far from its own, across a semicolon
    sentence = ('agreement × 3 moves them most, but it is undecided (supported alone at p = 0.022); the warm-up is '
                'supported; a bias of 0, a learning rate of 3e-3 and batch 32 move the couplings less than three '
                'seeds detect (undecided); shrinkage (0.8 bits; not supported); fewer parameters: by construction.')
    said = {phrase: nearest_verdict(sentence, re.search(phrase, sentence))
            for phrase in ("moves them most", "bias of 0", "warm-up", "shrinkage", "fewer parameters")}
    assert said == {"moves them most": "undecided", "bias of 0": "undecided", "warm-up": "supported",
                    "shrinkage": "not supported", "fewer parameters": "by construction"}
    text = "A b. C d, e.g. F,\nwrapped.\n\n| x | not tested: y \\| z |\n- An item.\n- Another, wrapped\nhere."
    assert segments(text) == ["A b.", "C d, e.g. F, wrapped.", "x", "not tested: y | z", "- An item.",
                              "- Another, wrapped here."]
