"""The DRA driver ``gpu.mockgpu.io``: the node's GPUs as ``resource.k8s.io/v1`` ResourceSlices (MIG placements
as partitionable devices with shared counters), the kubelet's DRA gRPC service (v1) and plugin registration.
It never schedules: the scheduler allocates, the kubelet asks this driver to prepare.

Public API (other rooms import these):

* ``slices.node_slices(inventory, gpus) -> list[dict]``: the pool's ResourceSlice objects;
  ``slices.device_uuids(inventory, gpus)``: device name -> UUID; ``slices.DRIVER``.
* ``prepare.Preparer(node, uuids, CDIDir(dir), get_claim)``: NodePrepare/NodeUnprepare without gRPC;
  ``prepare.CDI_KIND``, ``prepare.VISIBLE_DEVICES``, ``prepare.cdi_file_name``.
* ``server.DriverServers(preparer, plugin_dir, registry_dir)``: the running gRPC services (context manager);
  ``server.dra_socket``, ``server.registration_socket``, ``server.SUPPORTED_SERVICES``.
* ``publish.SlicePublisher(api_client, node, slices)``: create/update/delete the slices through the API.
* ``api.dra_v1_pb2[_grpc]``, ``api.pluginregistration_v1_pb2[_grpc]``: the generated stubs (``scripts/gen-proto``).
* ``mockgpu dra-driver --spec FILE --node NAME --plugin-dir DIR --registry-dir DIR --cdi-dir DIR [--kubeconfig F]``.
"""
