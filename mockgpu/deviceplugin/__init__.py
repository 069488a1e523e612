"""The fake NVIDIA device plugin: Kubernetes device plugin API v1beta1 over gRPC on Unix sockets.

Public API (other rooms import these):

* ``resources.resource_managers(inventory, config) -> list[NodeResourceManager]``: the resources a
  node advertises (``.resource``, ``.devices()``, ``.socket_name``, ``.validate_request``,
  ``.visible_ids``, ``.preferred_allocation``); ``resources.socket_name(resource)``.
* ``labels.gfd_labels(inventory, config) -> dict[str, str]``: GPU Feature Discovery node labels.
* ``allocate.container_response(rm, ids, AllocateSettings)``: what Allocate returns per container.
* ``server.NodePlugins(managers, plugin_dir, settings, health)``: the running plugin (context manager).
* ``api.api_pb2`` / ``api.api_pb2_grpc``: the generated v1beta1 stubs (``scripts/gen-proto``).
* ``mockgpu device-plugin --spec FILE --node NAME --plugin-dir DIR [--driver-dir DIR] [--list]``.
"""
