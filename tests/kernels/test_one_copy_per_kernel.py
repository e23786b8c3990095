"""No kernel passes another a bare ``int`` or ``bool`` constant: numba types it as a literal
and compiles the callee once more for each value, with its callees (the rule and its figures:
:mod:`harness.kernels`). A copy kept on purpose is marked ``# specialise: literal`` on the
call's last line.

The check reads the source of every compiled function of ``harness`` (cheap: no compile). It
sees constants written at the call (``0``, ``-1``, ``True``) and module-level integers passed
by name (numba freezes globals); a local variable that numba types as a literal is beyond it.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import sys
import textwrap
import types

from numba import njit
from numba.core.registry import CPUDispatcher

import harness

MARK = "# specialise: literal"


def _literal(node: ast.expr, function: types.FunctionType) -> bool:
    """Whether numba would type the argument ``node`` of a call in ``function`` as an int or
    bool literal."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (bool, int))
    if isinstance(node, ast.Name) and node.id not in function.__code__.co_varnames:
        value = function.__globals__.get(node.id)
        return isinstance(value, (bool, int)) and not isinstance(value, type)
    return False


def _callee(node: ast.Call, function: types.FunctionType) -> CPUDispatcher | None:
    """The compiled function that ``node`` calls, if it is one (by name or ``module.name``)."""
    target = node.func
    value = None
    if isinstance(target, ast.Name) and target.id not in function.__code__.co_varnames:
        value = function.__globals__.get(target.id)
    elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
        module = function.__globals__.get(target.value.id)
        value = getattr(module, target.attr, None) if isinstance(module, types.ModuleType) \
            else None
    if not isinstance(value, CPUDispatcher):
        return None
    # an inlined function is typed inside its caller: no compiled copy of its own
    return None if value.targetoptions.get("inline", "never") == "always" else value


def literal_calls(dispatcher: CPUDispatcher) -> list[str]:
    """``"module.caller -> callee (line)"`` for every call in ``dispatcher``'s source that
    passes a compiled function an int or bool literal, unless the call is marked."""
    function = dispatcher.py_func
    lines, first = inspect.getsourcelines(function)
    tree = ast.parse(textwrap.dedent("".join(lines)))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        callee = _callee(node, function)
        arguments = list(node.args) + [keyword.value for keyword in node.keywords]
        if callee is None or not any(_literal(arg, function) for arg in arguments):
            continue
        if MARK in lines[node.end_lineno - 1]:
            continue
        found.append(f"{function.__module__}.{function.__qualname__} -> "
                     f"{callee.py_func.__qualname__} (line {first + node.lineno - 1})")
    return found


def _harness_dispatchers() -> list[CPUDispatcher]:
    for info in pkgutil.walk_packages(harness.__path__, "harness."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    found = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("harness") and module is not None:
            for value in vars(module).values():
                if isinstance(value, CPUDispatcher) and value.py_func.__module__ == name:
                    found[id(value)] = value
    return list(found.values())


@njit(cache=False)
def _callee_for_the_check(x, flag):
    return x + 1 if flag else x


_STREAM = 7


@njit(cache=False)
def _caller_for_the_check(x):
    return (_callee_for_the_check(x, True) + _callee_for_the_check(x, _STREAM)
            + _callee_for_the_check(x, -1) + _callee_for_the_check(x, 1.0)
            + _callee_for_the_check(x, 0))  # specialise: literal


def test_the_check_finds_literals_written_at_the_call_or_by_a_global_name():
    """The check can fail: ``True``, a module-level integer and ``-1`` are found; a float
    and a marked call are not."""
    found = literal_calls(_caller_for_the_check)
    assert len(found) == 3, found
    assert all("_callee_for_the_check" in line for line in found)


def test_no_kernel_passes_another_an_unmarked_literal():
    dispatchers = _harness_dispatchers()
    assert len(dispatchers) > 50  # every kernel module was imported
    offences = [line for dispatcher in dispatchers for line in literal_calls(dispatcher)]
    assert offences == [], "\n".join(offences)
