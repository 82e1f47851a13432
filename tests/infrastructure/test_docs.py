"""Docs that cannot drift silently: the README's workflow diagram against the ASL, decision
numbers, and the dataset format cited from the repository itself."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

from cdk.naming import REPO_ROOT

ASL = REPO_ROOT / "statemachines" / "context_assembly.asl.json"
NODE = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)")


def mermaid(markdown: str) -> str:
    match = re.search(r"```mermaid\n(.*?)```", markdown, re.S)
    assert match, "no mermaid diagram"
    return match.group(1)


def parse_flowchart(diagram: str) -> tuple[dict[str, tuple[str, ...]], set[tuple[str, str]]]:
    """Each node id with the subgraphs around its first appearance (outermost first), and the
    edges between node (or subgraph) ids."""
    where: dict[str, tuple[str, ...]] = {}
    edges: set[tuple[str, str]] = set()
    stack: list[str] = []
    for raw in diagram.splitlines()[1:]:
        line = raw.strip()
        if not line:
            continue
        if line.startswith("subgraph "):
            name = NODE.match(line.removeprefix("subgraph "))
            assert name
            stack.append(name.group(1))
            continue
        if line == "end":
            stack.pop()
            continue
        line = re.sub(r"--\s+[^>]*?\s+-->", "-->", line)  # drop edge labels
        ids = []
        for part in line.split("-->"):
            node = NODE.match(part)
            assert node, f"cannot read {raw!r}"
            ids.append(node.group(1))
            where.setdefault(node.group(1), tuple(stack))
        edges |= set(itertools.pairwise(ids))
    return where, edges


def asl_states() -> tuple[dict[str, tuple[str, ...]], set[tuple[str, str]], set[str]]:
    """Each state with the Parallel states (and their branches, by start state) around it, the
    transitions (a Parallel also goes to each branch's start), and the Catch targets."""
    where: dict[str, tuple[str, ...]] = {}
    edges: set[tuple[str, str]] = set()
    caught: set[str] = set()

    def walk(states: dict[str, Any], around: tuple[str, ...]) -> None:
        for name, state in states.items():
            where[name] = around
            nexts = [
                state.get("Next"),
                state.get("Default"),
                *(c.get("Next") for c in state.get("Choices", [])),
            ]
            edges.update((name, n) for n in nexts if n)
            caught.update(c["Next"] for c in state.get("Catch", []))
            for branch in state.get("Branches", []):
                edges.add((name, branch["StartAt"]))
                walk(branch["States"], (*around, name, branch["StartAt"]))

    walk(json.loads(ASL.read_text())["States"], ())
    return where, edges, caught


def test_the_readme_diagram_has_the_asl_states_in_their_branches():
    drawn, drawn_edges = parse_flowchart(mermaid((REPO_ROOT / "README.md").read_text()))
    states, transitions, caught = asl_states()
    # every state but the Catch fallbacks (docs/architecture.md draws those), by its ASL name
    shown = {name for name in states if name not in caught}
    drawn_states = set(drawn) & set(states)
    assert drawn_states == shown
    # the same branches: states drawn together in a subgraph share one ASL branch, inside the
    # Parallel drawn around them (the Choice runs inside the graph branch, not after the Parallel)
    for name in shown:
        parallels_drawn = tuple(s for s in drawn[name] if s in states)
        assert parallels_drawn == states[name][0::2], f"{name} is drawn inside {parallels_drawn}"
    for a in shown:
        for b in shown:
            same_branch = states[a][1::2] == states[b][1::2]
            assert same_branch == (drawn[a] == drawn[b]), (
                f"{a} and {b}: one branch in the ASL iff in the diagram"
            )
    # every arrow between two states is a transition of the ASL
    for a, b in drawn_edges:
        if a in states and b in states:
            assert (a, b) in transitions, f"{a} --> {b} is no transition of {ASL.name}"


def test_decision_numbers_are_unique_and_match_their_titles():
    numbers: dict[str, Path] = {}
    for path in sorted((REPO_ROOT / "docs" / "decisions").glob("*.md")):
        number = path.name[:4]
        assert number.isdigit(), path.name
        assert number not in numbers, f"{path.name} and {numbers[number].name} share {number}"
        numbers[number] = path
        assert path.read_text().startswith(f"# {number}: "), f"{path.name}: title must start '# {number}: '"


def repo_files(*suffixes: str) -> list[Path]:
    """The project's own files with these suffixes (no dot folders, dependencies or build output)."""
    skip = {"node_modules", "cdk.out"}
    return [
        path
        for path in REPO_ROOT.rglob("*")
        if path.suffix in suffixes
        and path.is_file()
        and not any(part.startswith(".") or part in skip for part in path.relative_to(REPO_ROOT).parts)
    ]


def test_every_decision_cited_exists():
    names = {p.stem for p in (REPO_ROOT / "docs" / "decisions").glob("*.md")}
    for path in repo_files(".py", ".md"):
        for ref in re.findall(r"docs/decisions/(\d{4}[\w-]*)", path.read_text()):
            assert ref in names or (len(ref) == 4 and any(n.startswith(f"{ref}-") for n in names)), (
                f"{path.relative_to(REPO_ROOT)} cites docs/decisions/{ref}, which does not exist"
            )


def test_the_dataset_format_is_cited_from_the_repository():
    outside = "FORMAT" + ".md"  # the shared copy outside the repository (spelled apart: not a citation)
    assert (REPO_ROOT / "docs" / "dataset-format.md").is_file()
    for path in repo_files(".py", ".md", ".sql"):
        assert outside not in path.read_text(), (
            f"{path.relative_to(REPO_ROOT)} cites {outside}, not docs/dataset-format.md"
        )
