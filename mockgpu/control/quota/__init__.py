"""Quota evaluation shared by the API server's ResourceQuota admission and the quota controller.

Upstream keeps this below both, in ``k8s.io/apiserver/pkg/quota/v1`` (resource-list arithmetic, the generic
object-count evaluator) and ``pkg/quota/v1/evaluator/core`` (the pod evaluator): ``resources`` is the first,
``evaluators`` the second. Pure functions over plain objects; nothing here talks to an API server.
"""
