"""Reads a ``<name>.hatchet`` file written by :mod:`naiad.profiler` and prints its tree with
derived metrics, as ``triton.profiler.viewer``'s ``parse``/``print_tree`` do for scripts.

Derived metrics (per entry, from its summed ``time (ns)`` and user metrics): ``time/ms``
(``time/s``, ``time/us``, ``time/ns``), ``avg_time/ms`` (per call), ``tflop/s`` / ``gflop/s``
(``flops``), ``tflop16/s`` etc. (``flops16``), ``gbyte/s`` / ``tbyte/s`` (``bytes``).
"""
from __future__ import annotations

import json

_TIME = {"time/s": 1e-9, "time/ms": 1e-6, "time/us": 1e-3, "time/ns": 1.0}
_RATE = {"gflop": 1e9, "tflop": 1e12, "gbyte": 1e9, "tbyte": 1e12}


def _value(metric: str, m: dict) -> float:
    ns = m.get("time (ns)", 0)
    if metric in _TIME:
        return ns * _TIME[metric]
    if metric.startswith("avg_time/") and metric[4:] in _TIME:
        return ns * _TIME[metric[4:]] / max(m.get("count", 1), 1)
    unit, _, per = metric.partition("/")
    if per == "s":
        for prefix, scale in _RATE.items():
            if unit.startswith(prefix):
                width = unit[len(prefix):]
                key = ("flops" if "flop" in prefix else "bytes") + width
                return m.get(key, 0) / scale / (ns * 1e-9) if ns else 0.0
    if metric in m:
        return m[metric]
    raise ValueError(f"unknown metric {metric!r} (naiad.profiler.viewer derives "
                     f"{', '.join(_TIME)}, avg_time/*, tflop*/s, gflop*/s, gbyte/s, tbyte/s)")


def parse(metric_names, filename):
    """``(tree, metrics)``: the file's root frames and the metric names to show."""
    with open(filename) as f:
        tree = json.load(f)
    for frame in tree:   # unknown metrics fail here, not while printing
        for name in metric_names:
            _value(name, frame["metrics"])
    return tree, list(metric_names)


def print_tree(tree, metrics, depth: int = 100, file=None) -> None:
    """One line per entry: the metrics, then the name, indented by depth."""
    def walk(node, level):
        if level > depth:
            return
        shown = " ".join(f"{_value(m, node['metrics']):.3f}" for m in metrics)
        print(f"{shown} {'  ' * level}{node['frame']['name']}", file=file)
        for child in node.get("children", []):
            walk(child, level + 1)

    print(" ".join(metrics), file=file)
    for root in tree:
        walk(root, 0)
