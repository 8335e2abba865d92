"""The built-in tools of the CLI and the demo: a safe calculator and the current UTC time.

Both are safe to hand to any model: ``calculator`` evaluates arithmetic only (it parses the expression with
``ast`` and walks a handful of node types; nothing is ``eval``-ed, no names, calls or attributes exist), with
caps on the size of numbers so that ``9**9**9`` cannot hang the process; ``utc_now`` reads the clock. Neither
touches files, the network or the environment.

>>> calculator("17 * 23"), calculator("2 ** 10 / 4"), calculator("-(3 + 4) % 5")
(391, 256.0, 3)
"""

from __future__ import annotations

import ast
import datetime
import operator
from collections.abc import Callable
from typing import Any

from ..tools import Tool, tool

__all__ = ["BUILTIN_TOOLS", "CalculatorError", "calculator", "evaluate", "utc_now"]

_MAX_EXPRESSION = 200
_MAX_EXPONENT = 1000
_MAX_MAGNITUDE = 10**100

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}


class CalculatorError(ValueError):
    """The expression is not plain arithmetic, or its numbers grow too large."""


def _check(value: int | float) -> int | float:
    if abs(value) > _MAX_MAGNITUDE:
        raise CalculatorError("the result is too large (limit: 1e100)")
    return value


def _eval(node: ast.AST) -> int | float:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return _check(node.value)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _check(_UNARY[type(node.op)](_eval(node.operand)))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_EXPONENT:
            raise CalculatorError(f"the exponent {right} is too large (limit: {_MAX_EXPONENT})")
        try:
            result = _BINARY[type(node.op)](left, right)
        except ZeroDivisionError:
            raise CalculatorError("division by zero") from None
        except OverflowError:
            raise CalculatorError("the result is too large") from None
        if isinstance(result, complex):
            raise CalculatorError("the result is not a real number")
        return _check(result)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitXor):
        raise CalculatorError("'^' is not a power here: write a ** b")
    raise CalculatorError(
        f"only numbers, + - * / // % ** and parentheses are allowed, not {type(node).__name__}"
    )


def evaluate(expression: str) -> int | float:
    """Evaluate arithmetic safely; ``CalculatorError`` for anything else.

    >>> evaluate("__import__('os')")
    Traceback (most recent call last):
    ...
    agentflow.demo.tools.CalculatorError: only numbers, + - * / // % ** and parentheses are allowed, not Call
    """
    text = expression.replace("×", "*").replace("÷", "/").strip()
    if not text:
        raise CalculatorError("the expression is empty")
    if len(text) > _MAX_EXPRESSION:
        raise CalculatorError(f"the expression is longer than {_MAX_EXPRESSION} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise CalculatorError(f"not an arithmetic expression: {exc.msg}") from None
    return _eval(tree)


@tool(inline=True)
def calculator(expression: str) -> int | float:
    """Evaluate an arithmetic expression exactly: numbers, + - * / // % ** and parentheses.

    Args:
        expression: The expression, e.g. "17 * 23" or "3.14159 * 5 ** 2".
    """
    return evaluate(expression)


@tool(inline=True)
def utc_now() -> str:
    """The current date and time in UTC, in ISO 8601 format."""
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0).isoformat()


BUILTIN_TOOLS: tuple[Tool[..., Any], ...] = (calculator, utc_now)
"""The tools the CLI's agent has."""
