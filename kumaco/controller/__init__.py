"""The controller: stores fed by watches, the loop, the status writer, window announcements.

It may import :mod:`kumaco.kube` and :mod:`kumaco.core`; decisions are the core's
(:func:`kumaco.core.planning.planner.plan` and :func:`kumaco.core.planning.planner.changes`), this
layer only observes, applies and announces.
"""
