"""First-order mutation operators over Python source, with ``ast`` (docs/how-to/mutate.md).

A *site* is one change of one token or expression of a module's source; a mutant is the
module with exactly one site applied. The operators (``OPERATORS``):

=========== ======================================================================
comparison  ``<`` -> ``<=``, ``>=``; ``<=`` -> ``<``, ``>``; ``>`` -> ``>=``, ``<=``;
            ``>=`` -> ``>``, ``<``; ``==`` <-> ``!=``; ``is`` <-> ``is not``;
            ``in`` <-> ``not in`` (each operator of a chain apart)
arithmetic  ``+`` <-> ``-``; ``*`` -> ``/``; ``/`` -> ``*``; ``//`` -> ``*``;
            ``%`` -> ``//``; ``**`` -> ``*`` (augmented assignments too: ``+=`` -> ``-=``)
bitwise     ``&`` <-> ``|``; ``^`` -> ``|``; ``<<`` <-> ``>>``
boolean     ``and`` <-> ``or`` (every operator of the chain at once)
unary       ``-x``, ``~x``, ``not x`` -> ``x`` (``-`` of a literal is the constant's)
constant    an int c -> c + 1, c - 1; a float c -> 2c, c / 2 (0.0 -> 1.0);
            ``True`` <-> ``False`` (negative literals included: -1 -> 0, -2)
index       ``a[e]`` -> ``a[e + 1]``, ``a[e - 1]`` for an index or slice bound e that is
            not a literal (a literal index is the constant operator's)
=========== ======================================================================

Never mutated: decorators, annotations, f-strings, strings, ``None``.

The change is made in the text (the one token, or the one expression), so every other byte
and every line number of the module stay as they were (harness/mutate/edit.py checks it).
"""

from __future__ import annotations

import ast
import io
import tokenize
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

OPERATORS = ("comparison", "arithmetic", "bitwise", "boolean", "unary", "constant", "index")

COMPARISON = {"<": ("<=", ">="), "<=": ("<", ">"), ">": (">=", "<="), ">=": (">", "<"),
              "==": ("!=",), "!=": ("==",), "is": ("is not",), "is not": ("is",),
              "in": ("not in",), "not in": ("in",)}
ARITHMETIC = {"+": ("-",), "-": ("+",), "*": ("/",), "/": ("*",), "//": ("*",), "%": ("//",),
              "**": ("*",)}
BITWISE = {"&": ("|",), "|": ("&",), "^": ("|",), "<<": (">>",), ">>": ("<<",)}
BOOLEAN = {"and": "or", "or": "and"}

_CMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
        ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}
_BIN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
        ast.Mod: "%", ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
        ast.LShift: "<<", ast.RShift: ">>"}
_UNARY = {ast.USub: "-", ast.Invert: "~", ast.Not: "not"}
CLASSES = {text: cls for cls, text in {**_CMP, **_BIN}.items()}
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
SKIPPED_FIELDS = ("decorator_list", "annotation", "returns", "type_comment", "type_params")


@dataclass(frozen=True)
class Site:
    """One first-order change: ``original`` (text at ``start:end`` of the module's source,
    character offsets) becomes ``replacement``. ``key`` finds the node in a fresh parse
    (``apply``); ``index`` is the operator's place in a comparison chain. ``anchor`` is the
    line span whose execution means the site ran (its statement, or a compound statement's
    header; None: it runs at import), ``block`` the span of the statements around it (what a
    compiled kernel's line table is asked about); ``jit``: inside an ``@triton.jit`` function."""

    module: str
    path: str
    unit: str
    line: int
    col: int
    operator: str
    original: str
    replacement: str
    start: int
    end: int
    key: tuple
    index: int
    anchor: tuple[int, int] | None
    block: tuple[int, int] | None
    jit: bool

    @property
    def label(self) -> str:
        """'triton_race.py:67 `>` -> `>=`'"""
        name = self.path.rsplit("/", 1)[-1]
        return f"{name}:{self.line} `{self.original}` -> `{self.replacement}`"

    @property
    def order(self) -> tuple:
        return (self.module, self.start, self.end, self.operator, self.replacement)


class Source:
    """A module's text with its tokens and line offsets (ast columns are UTF-8 bytes;
    offsets here are characters)."""

    def __init__(self, text: str):
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))
        self.tokens = [(self.at(*t.start, chars=True), self.at(*t.end, chars=True), t.string)
                       for t in tokenize.generate_tokens(io.StringIO(text).readline)
                       if t.type in (tokenize.OP, tokenize.NAME)]
        self.token_starts = [t[0] for t in self.tokens]

    def at(self, line: int, col: int, chars: bool = False) -> int:
        """The character offset of (line, col); ``col`` in UTF-8 bytes unless ``chars``."""
        if line > len(self.lines):
            return self.starts[-1]
        text = self.lines[line - 1]
        return self.starts[line - 1] + (col if chars else
                                         len(text.encode()[:col].decode(errors="ignore")))

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (self.at(node.lineno, node.col_offset),
                self.at(node.end_lineno, node.end_col_offset))

    def token(self, words: str, lo: int, hi: int) -> tuple[int, int] | None:
        """The span of the operator ``words`` ('<', 'is not') between offsets lo and hi."""
        wanted = words.split()
        i = bisect_left(self.token_starts, lo)
        while i < len(self.tokens) and self.tokens[i][1] <= hi:
            got = [t[2] for t in self.tokens[i:i + len(wanted)]]
            if got == wanted:
                return self.tokens[i][0], self.tokens[i + len(wanted) - 1][1]
            i += 1
        return None


def key_of(node: ast.AST) -> tuple:
    return (type(node).__name__, node.lineno, node.col_offset, node.end_lineno,
            node.end_col_offset)


def _literal(node: ast.AST):
    """(value, node) of a numeric or bool literal, a negative one included; else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
            and isinstance(node.operand, ast.Constant) \
            and type(node.operand.value) in (int, float):
        return -node.operand.value
    if isinstance(node, ast.Constant) and type(node.value) in (int, float, bool):
        return node.value
    return None


def constant_replacements(value, text: str) -> list[str]:
    """The literal texts a constant becomes (see the module's table)."""
    if isinstance(value, bool):
        return [str(not value)]
    if isinstance(value, int):
        hexa = text.lstrip("-").lower().startswith("0x")
        return [hex(v) if hexa and v >= 0 else str(v) for v in (value + 1, value - 1)]
    if value == 0.0:
        return ["1.0"]
    return [repr(value * 2.0), repr(value / 2.0)]


class _Finder(ast.NodeVisitor):
    """Collects the sites of one unit (a top-level def, class or assignment)."""

    def __init__(self, module: str, path: str, unit: str, source: Source, jit: bool):
        self.module, self.path, self.unit, self.source = module, path, unit, source
        self.jit = jit
        self.found: list[Site] = []
        self.statements: list[ast.stmt] = []     # enclosing statements, innermost last
        self.blocks: list[list[ast.stmt]] = []   # enclosing statement lists

    # -- where a site runs -------------------------------------------------------------
    def _anchor(self, node: ast.AST) -> tuple[int, int] | None:
        """The lines whose execution means ``node`` ran: its simple statement, or the
        header of its compound statement; None outside every function body (module-level
        code, class bodies, a top-level def's defaults: they run at import)."""
        if not any(isinstance(s, FUNCTIONS) and _inside(node, _body_span(s))
                   for s in self.statements):
            return None
        statement = self.statements[-1]
        if isinstance(statement, (*FUNCTIONS, ast.ClassDef, ast.Try)):
            return self._block()             # a nested def's defaults: the block around it
        header = _header_end(statement)
        return statement.lineno, statement.end_lineno if header is None else header

    def _block(self) -> tuple[int, int] | None:
        if not self.blocks:
            return None
        block = self.blocks[-1]
        return block[0].lineno, block[-1].end_lineno

    def _add(self, node, operator: str, original: str, replacement: str, span, index=0):
        line = bisect_right(self.source.starts, span[0])
        col = span[0] - self.source.starts[line - 1]
        self.found.append(Site(self.module, self.path, self.unit, line, col, operator,
                               original, replacement, span[0], span[1], key_of(node), index,
                               self._anchor(node), self._block(), self.jit))

    # -- traversal ---------------------------------------------------------------------
    def generic_visit(self, node):
        if isinstance(node, ast.JoinedStr):
            return
        is_statement = isinstance(node, ast.stmt)
        if is_statement:
            self.statements.append(node)
        for field, value in ast.iter_fields(node):
            if field in SKIPPED_FIELDS:
                continue
            if isinstance(value, list) and value and all(isinstance(v, ast.stmt)
                                                          for v in value):
                self.blocks.append(value)
                for item in _without_docstring(value):
                    self.visit(item)
                self.blocks.pop()
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item)
            elif isinstance(value, ast.AST):
                self.visit(value)
        if is_statement:
            self.statements.pop()

    def _between(self, node, words: str, left: ast.AST, right: ast.AST, operator: str,
                 replacements, index: int = 0) -> None:
        lo, hi = self.source.span(left)[1], self.source.span(right)[0]
        span = self.source.token(words, lo, hi)
        if span is not None:
            for new in replacements:
                self._add(node, operator, words, new, span, index)

    def visit_BinOp(self, node):
        words = _BIN.get(type(node.op))
        table = ARITHMETIC if words in ARITHMETIC else BITWISE
        if words in table:
            self._between(node, words, node.left, node.right,
                          "arithmetic" if table is ARITHMETIC else "bitwise", table[words])
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        words = _BIN.get(type(node.op))
        table = ARITHMETIC if words in ARITHMETIC else BITWISE
        if words in table:
            self.statements.append(node)            # the statement is its own anchor
            self._between(node, words + "=", node.target, node.value,
                          "arithmetic" if table is ARITHMETIC else "bitwise",
                          [w + "=" for w in table[words]])
            self.statements.pop()
        self.generic_visit(node)

    def visit_Compare(self, node):
        left = node.left
        for i, (op, right) in enumerate(zip(node.ops, node.comparators, strict=True)):
            words = _CMP[type(op)]
            self._between(node, words, left, right, "comparison", COMPARISON[words], i)
            left = right
        self.generic_visit(node)

    def visit_BoolOp(self, node):
        words = "and" if isinstance(node.op, ast.And) else "or"
        spans = [self.source.token(words, self.source.span(a)[1], self.source.span(b)[0])
                 for a, b in zip(node.values, node.values[1:], strict=False)]
        if all(spans):
            start, end = self.source.span(node)
            text = self.source.text[start:end]
            for lo, hi in reversed(spans):
                text = text[:lo - start] + BOOLEAN[words] + text[hi - start:]
            self._add(node, "boolean", self.source.text[start:end], text, (start, end))
        self.generic_visit(node)

    def visit_UnaryOp(self, node):
        value = _literal(node)
        if value is not None:
            self._constant(node, value)
            return
        words = _UNARY.get(type(node.op))
        if words is not None:
            start, end = self.source.span(node)
            text = self.source.text[start:end]
            self._add(node, "unary", text, text[len(words):].lstrip(), (start, end))
        self.generic_visit(node)

    def visit_Constant(self, node):
        value = _literal(node)
        if value is not None:
            self._constant(node, value)

    def _constant(self, node, value) -> None:
        span = self.source.span(node)
        text = self.source.text[span[0]:span[1]]
        for new in constant_replacements(value, text):
            self._add(node, "constant", text, new, span)

    def visit_Subscript(self, node):
        indices = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        for index in indices:
            bounds = [index.lower, index.upper] if isinstance(index, ast.Slice) else [index]
            for bound in bounds:
                if bound is None or _literal(bound) is not None or (
                        isinstance(bound, ast.Constant)):
                    continue
                span = self.source.span(bound)
                text = self.source.text[span[0]:span[1]]
                for sign in ("+", "-"):
                    self._add(bound, "index", text, f"{text} {sign} 1", span)
        self.generic_visit(node)


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    first = body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
            and isinstance(first.value.value, str):
        return body[1:]
    return body


def _header_end(statement: ast.stmt) -> int | None:
    """The last line of a compound statement's header (None for a simple statement)."""
    if isinstance(statement, (ast.If, ast.While)):
        return statement.test.end_lineno
    if isinstance(statement, (ast.For, ast.AsyncFor)):
        return statement.iter.end_lineno
    if isinstance(statement, (ast.With, ast.AsyncWith)):
        return statement.items[-1].context_expr.end_lineno
    return None


def _body_span(statement) -> tuple[int, int]:
    return statement.body[0].lineno, statement.end_lineno


def _inside(node: ast.AST, span: tuple[int, int]) -> bool:
    return span[0] <= node.lineno and node.end_lineno <= span[1]


def is_jit(node: ast.AST) -> bool:
    """A def decorated with Triton's ``jit`` (``@triton.jit``, ``@triton.jit(...)``, ``@jit``)."""
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
        "jit" in ast.unparse(d) for d in node.decorator_list)


def unit_sites(module: str, path: str, unit: str, node: ast.stmt, source: Source) -> list[Site]:
    """The sites of one top-level statement ``node`` (a def, a class, an assignment)."""
    finder = _Finder(module, path, unit, source, is_jit(node))
    finder.visit(node)
    return finder.found
