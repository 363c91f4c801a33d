"""The web console: cluster → node → GPU → pod, with the scheduling reasons beside the metrics."""

from extender.http.console.routes import CSP, build_router

__all__ = ["CSP", "build_router"]
