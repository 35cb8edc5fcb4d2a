"""The parser of symbolic shape specifications (``"b, 2*b + 1, mod(b, 3)"``), JAX's grammar and
error messages (``jax._src.export.shape_poly._Parser``).

Layer: surface. Imports the standard library only: the dimension expressions are built through
the callbacks it is given (``variable(name)``, ``operation(op, e1, e2)``) and Python's ``+``,
``-``, ``*`` on them, so ``_shape_poly`` (which defines them) imports this module, not the reverse.

A shape is a comma-separated list of dimensions, optionally in parentheses; ``_`` takes the size
of ``like`` at its position and a final ``...`` the rest of ``like``. A dimension is a sum of
terms, a term a product of factors (``^`` an integer power), a factor an integer, a variable or
``floordiv``/``mod``/``max``/``min`` of two dimensions.

>>> names = lambda n: n
>>> parse_shape("(b, 4)", None, "'(b, 4)'", names, None)
('b', 4)
>>> parse_shape("b, _", (None, 3), "'b, _'", names, None)
('b', 3)
>>> parse_shape("b, 3", (None, 4), "'b, 3'", names, None)
Traceback (most recent call last):
ValueError: syntax error in symbolic shape 'b, 3' in dimension 1: different size 3 for known ...
"""

from __future__ import annotations

import io
import tokenize
from collections.abc import Callable, Sequence

__all__ = ["parse_dim", "parse_shape"]

_OPERATIONS = ("floordiv", "mod", "max", "min")
_FOLLOW_SHAPE = [tokenize.ENDMARKER, tokenize.RPAR]
_FOLLOW_EXPR = [*_FOLLOW_SHAPE, tokenize.COMMA]
_FOLLOW_TERM = [*_FOLLOW_EXPR, tokenize.PLUS, tokenize.MINUS]


def parse_shape(spec: str, like, spec_repr: str, variable: Callable, operation: Callable | None) -> tuple:
    """The dimensions that ``spec`` writes (``like``: the sizes that ``_`` and ``...`` take;
    ``spec_repr``: how errors name the specification)."""
    return _Parser(spec, like, spec_repr, variable, operation).parse()


def parse_dim(text: str, spec_repr: str, variable: Callable, operation: Callable | None):
    """One dimension expression (a side of a constraint)."""
    dims = parse_shape(text, None, spec_repr, variable, operation)
    if len(dims) != 1:
        raise ValueError(
            f"syntax error in symbolic shape {spec_repr}: expected one dimension, got {len(dims)}"
        )
    return dims[0]


def _is_constant(e) -> bool:
    return isinstance(e, int)


class _Parser:
    def __init__(self, spec: str, like: Sequence[int | None] | None, spec_repr: str, variable, operation):
        self.spec = spec
        self.spec_repr = spec_repr
        self.like = like
        self.dimensions: list = []
        self.variable = variable
        self.operation = operation

    def parse(self) -> tuple:
        self.tokens = tokenize.tokenize(io.BytesIO(self.spec.encode("utf-8")).readline)
        tok = self.consume(self.next_tok(), tokenize.ENCODING)
        shape, tok = self.shape(tok)
        self.expect(tok, [tokenize.ENDMARKER])
        return tuple(shape)

    def add_dim(self, expr, tok) -> None:
        if expr is None:
            raise self.error(tok, f"unexpected placeholder for unknown dimension; like={self.like}")
        if _is_constant(expr) and self.like is not None:
            like_dim = self.like[len(self.dimensions)]
            if expr != like_dim:
                raise self.error(tok, f"different size {expr} for known dimension; like={self.like}")
        self.dimensions.append(expr)

    def error(self, tok, detail: str) -> ValueError:
        msg = (
            f"syntax error in symbolic shape {self.spec_repr} in dimension {len(self.dimensions)}: {detail}. "
        )
        if tok is not None:
            msg += f"Parsed '{tok.line[: tok.start[1]]}', remaining '{tok.line[tok.start[1] :]}'."
        return ValueError(msg)

    def next_tok(self):
        while True:
            try:
                t = next(self.tokens)
            except StopIteration:
                raise self.error(None, "unexpected end of string") from None
            except tokenize.TokenError:
                raise self.error(None, "unexpected end of string") from None
            if t.exact_type not in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
                return t

    def expect(self, tok, expected) -> None:
        if tok.exact_type not in expected:
            names = ", ".join(tokenize.tok_name[t] for t in expected)
            raise self.error(
                tok, f"expecting one of {{{names}}} but found {tokenize.tok_name[tok.exact_type]}"
            )

    def consume(self, tok, expected):
        self.expect(tok, [expected])
        return self.next_tok()

    def integer(self, tok):
        self.expect(tok, [tokenize.NUMBER])
        try:
            val = int(tok.string)
        except ValueError:
            raise self.error(tok, f"expecting integer, found {tok.string}") from None
        return val, self.next_tok()

    def shape(self, tok):
        if tok.exact_type == tokenize.LPAR:
            res, tok = self.shape(self.next_tok())
            return res, self.consume(tok, tokenize.RPAR)
        while True:
            if tok.exact_type in _FOLLOW_SHAPE:
                break
            placeholder = tok.exact_type == tokenize.NAME and tok.string == "_"
            if tok.exact_type == tokenize.ELLIPSIS or placeholder:
                if self.like is None:
                    raise self.error(tok, "spec contains ... but no 'like' shape was given")
                needed = len(self.dimensions) + (1 if placeholder else 0)
                if len(self.like) < needed:
                    raise self.error(
                        tok,
                        f"cannot resolve placeholder '{tok.string}' because we parsed {len(self.dimensions)} "
                        f"already and 'like' shape has only {len(self.like)} dimensions",
                    )
            if tok.exact_type == tokenize.ELLIPSIS:
                for d in self.like[len(self.dimensions) :]:
                    self.add_dim(d, tok)
                tok = self.next_tok()
                break
            if placeholder:
                e = self.like[len(self.dimensions)]
                tok = self.next_tok()
            else:
                e, tok = self.expr(tok)
            self.add_dim(e, tok)
            if tok.exact_type in _FOLLOW_SHAPE:
                break
            tok = self.consume(tok, tokenize.COMMA)
        return tuple(self.dimensions), tok

    def expr(self, tok):
        negated = tok.exact_type == tokenize.MINUS
        if negated or tok.exact_type == tokenize.PLUS:
            tok = self.next_tok()
        acc = None
        while True:
            t, tok = self.term(tok)
            t = -t if negated else t
            acc = t if acc is None else acc + t
            if tok.exact_type in _FOLLOW_EXPR:
                return acc, tok
            negated = tok.exact_type == tokenize.MINUS
            self.expect(tok, [tokenize.PLUS, tokenize.MINUS])
            tok = self.next_tok()

    def term(self, tok):
        acc = None
        while True:
            f, tok = self.factor(tok)
            if tok.exact_type == tokenize.CIRCUMFLEX:
                tok = self.next_tok()
                self.expect(tok, [tokenize.NUMBER])
                power, tok = self.integer(tok)
                base, f = f, 1
                for _ in range(power):
                    f = base * f
            acc = f if acc is None else acc * f
            if tok.exact_type in _FOLLOW_TERM:
                return acc, tok
            tok = self.consume(tok, tokenize.STAR)

    def factor(self, tok):
        if tok.exact_type == tokenize.NAME:
            if tok.string in _OPERATIONS and self.operation is not None:
                return self.binary(tok.string, self.next_tok())
            return self.variable(tok.string), self.next_tok()
        sign = 1
        if tok.exact_type == tokenize.MINUS:  # (-k: a negative constant)
            sign = -1
            tok = self.next_tok()
            self.expect(tok, [tokenize.NUMBER])
        if tok.exact_type == tokenize.NUMBER:
            v, tok = self.integer(tok)
            return v * sign, tok
        self.expect(tok, [tokenize.NAME, tokenize.MINUS, tokenize.NUMBER])
        raise AssertionError("unreachable")

    def binary(self, op: str, tok):
        tok = self.consume(tok, tokenize.LPAR)
        e1, tok = self.expr(tok)
        tok = self.consume(tok, tokenize.COMMA)
        e2, tok = self.expr(tok)
        tok = self.consume(tok, tokenize.RPAR)
        return self.operation(op, e1, e2), tok
