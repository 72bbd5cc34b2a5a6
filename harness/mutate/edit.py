"""Applying a site: the mutant's text, checked against the tree it must parse to.

The change is made in the text (the one token, or the one expression a site names), so
every other byte and every line number of the module stay as they were; the mutant's source
is then parsed and its tree compared with the original's tree changed at that node: an edit
that parses otherwise (an operator of another precedence, ``a | b & c`` with ``&`` made
``|``) is put in parentheses, and a site that no edit gets right is refused.
"""

from __future__ import annotations

import ast

from sampling_harness.mutate.operators import CLASSES, Site, Source, key_of


def _apply_to_tree(tree: ast.Module, site: Site) -> ast.Module:
    """``tree`` (a fresh parse of the original) with ``site``'s change made on its node."""

    class Change(ast.NodeTransformer):
        def visit(self, node):
            if isinstance(node, ast.AST) and hasattr(node, "lineno") and \
                    key_of(node) == site.key:
                return _changed(node, site)
            return super().visit(node)

    return Change().visit(tree)


def _changed(node: ast.AST, site: Site) -> ast.AST:
    if site.operator in ("comparison",):
        node.ops[site.index] = CLASSES[site.replacement]()
    elif site.operator in ("arithmetic", "bitwise"):
        node.op = CLASSES[site.replacement.removesuffix("=")]()
    elif site.operator == "boolean":
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif site.operator == "unary":
        return node.operand
    elif site.operator == "constant":
        return ast.parse(site.replacement, mode="eval").body
    elif site.operator == "index":
        return ast.BinOp(left=node, op=ast.Add() if site.replacement.endswith("+ 1")
                         else ast.Sub(), right=ast.Constant(1))
    return node


def apply(text: str, site: Site) -> str:
    """The module's source with ``site`` applied; every other byte and line kept. The
    result parses to the original tree changed at the site's node; an edit that would parse
    otherwise (precedence) is parenthesised. ``ValueError`` if no edit parses right."""
    expected = ast.dump(_apply_to_tree(ast.parse(text), site))
    edits = [site.replacement, f"({site.replacement})"]
    if site.operator == "index":
        edits.append(f"({site.original}) {site.replacement[len(site.original) + 1:]}")
    for edit in edits:
        mutated = text[:site.start] + edit + text[site.end:]
        try:
            if ast.dump(ast.parse(mutated)) == expected:
                return mutated
        except SyntaxError:
            pass
    node = _find(ast.parse(text), site.key)
    if isinstance(node, ast.BinOp):      # both operands in parentheses, newlines kept
        start, end = Source(text).span(node)
        left, right = text[start:site.start], text[site.end:end]
        mutated = f"{text[:start]}(({left}){site.replacement}({right})){text[end:]}"
        if ast.dump(ast.parse(mutated)) == expected:
            return mutated
    raise ValueError(f"{site.label}: no edit of the text gives the mutated tree")


def _find(tree: ast.AST, key: tuple) -> ast.AST | None:
    return next((n for n in ast.walk(tree) if hasattr(n, "lineno") and key_of(n) == key),
                None)

