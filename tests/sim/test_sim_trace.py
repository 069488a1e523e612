"""The trace loader: the shipped files, the upstream variants, and clear errors on bad files."""

from __future__ import annotations

from pathlib import Path

import pytest
from sim_builders import NODE_HEADER, POD_HEADER, write_trace

from mockgpu.errors import ConfigError
from mockgpu.sim.trace import load_nodes, load_pods, load_trace


def test_shipped_trace_matches_its_readme():
    nodes, pods = load_trace()
    assert (len(nodes), nodes.total_gpus, len(pods)) == (1213, 6212, 8152)
    assert int((pods.num_gpu > 0).sum()) == 7064
    assert int(pods.total_gpu_milli.sum()) == 6_086_800  # ≈ 6,087 GPUs requested in total
    assert set(pods.gpu_spec) == {""}


def test_tiny_trace_dir_is_found_by_file_names(tmp_path):
    nodes, pods = load_trace(write_trace(tmp_path / "t"))
    assert nodes.names[0] == "openb-node-0000" and nodes.models[2] == "G2"
    assert pods.num_gpu.tolist() == [1, 1, 1, 2, 1, 4, 0]
    assert pods.gpu_milli.tolist() == [1000, 500, 250, 1000, 460, 1000, 0]


def test_variant_without_optional_columns(tmp_path):
    # like upstream openb_pod_list_multigpu50.csv: only the first five columns
    path = tmp_path / "openb_pod_list_multigpu50.csv"
    path.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\nopenb-pod-0000,12000,16384,1,1000\n"
                    "openb-pod-0001,6000,12288,1,460\n")
    pods = load_pods(path)
    assert pods.gpu_milli.tolist() == [1000, 460] and pods.gpu_spec == ("", "")


def test_integral_floats_from_pandas_exports_are_accepted(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("cpu_milli,memory_mib,num_gpu,gpu_milli\n1000.0,100,1,500.0\n")
    assert load_pods(path).gpu_milli.tolist() == [500]


def test_variant_without_gpu_milli_defaults_to_whole_gpus(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("cpu_milli,memory_mib,num_gpu\n1000,100,2\n500,50,0\n")
    pods = load_pods(path)
    assert pods.gpu_milli.tolist() == [1000, 0] and pods.names == ("pod-00000", "pod-00001")


def test_gpuspec_variant_keeps_the_allowed_models(tmp_path):
    path = tmp_path / "openb_pod_list_gpuspec33.csv"
    path.write_text(POD_HEADER + "\nopenb-pod-0009,12000,16384,1,1000,V100M16|V100M32,LS,Running,1,2,1\n")
    assert load_pods(path).gpu_spec == ("V100M16|V100M32",)


def test_node_list_with_cpu_only_nodes(tmp_path):
    path = tmp_path / "openb_node_list_all_node.csv"
    path.write_text(NODE_HEADER + "\nopenb-node-0000,32000,262144,0,\nopenb-node-0001,96000,786432,8,V100M32\n")
    nodes = load_nodes(path)
    assert nodes.gpus.tolist() == [0, 8] and nodes.models == ("", "V100M32")


BAD_PODS = [
    ("missing-column", "name,cpu_milli,num_gpu,gpu_milli\np,1,1,1000\n", r"missing column\(s\) memory_mib"),
    ("not-integer", "cpu_milli,memory_mib,num_gpu,gpu_milli\nlots,1,1,1000\n", "column cpu_milli: not an integer"),
    ("fraction", "cpu_milli,memory_mib,num_gpu,gpu_milli\n1.5,1,1,1000\n", "column cpu_milli: not an integer: '1.5'"),
    ("negative", "cpu_milli,memory_mib,num_gpu,gpu_milli\n1,-5,1,1000\n", "line 2, column memory_mib: must be >= 0"),
    ("empty-value", "cpu_milli,memory_mib,num_gpu,gpu_milli\n1,,1,1000\n", "line 2, column memory_mib: missing value"),
    ("share-over-one-gpu", "cpu_milli,memory_mib,num_gpu,gpu_milli\n1,1,1,1500\n", "more than one GPU"),
    ("share-on-many-gpus", "cpu_milli,memory_mib,num_gpu,gpu_milli\n1,1,2,500\n", "needs num_gpu 1"),
    ("milli-without-gpu", "cpu_milli,memory_mib,num_gpu,gpu_milli\n1,1,0,500\n", "with num_gpu 0"),
    ("header-only", "cpu_milli,memory_mib,num_gpu,gpu_milli\n", "no data rows"),
    ("empty", "", "empty file"),
]


@pytest.mark.parametrize(("text", "message"), [c[1:] for c in BAD_PODS], ids=[c[0] for c in BAD_PODS])
def test_malformed_pod_list_is_a_config_error(tmp_path, text, message):
    path = tmp_path / "pods.csv"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as err:
        load_pods(path)
    assert err.value.exit_code == 2 and str(path) in str(err.value) and "\n" not in str(err.value)


def test_missing_file_and_bad_directory(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        load_nodes(tmp_path / "absent.csv")
    with pytest.raises(ConfigError, match="not a directory"):
        load_trace(tmp_path / "nowhere")
    (tmp_path / "d").mkdir()
    with pytest.raises(ConfigError, match="no node list file"):
        load_trace(tmp_path / "d")


def test_ambiguous_pod_lists_must_be_named(tmp_path):
    d = write_trace(tmp_path / "t")
    (d / "openb_pod_list_default.csv").rename(d / "openb_pod_list_cpu050.csv")
    (d / "openb_pod_list_gpushare40.csv").write_text(Path(d / "openb_pod_list_cpu050.csv").read_text())
    with pytest.raises(ConfigError, match="several pod list files"):
        load_trace(d)
    assert len(load_trace(d, pods="openb_pod_list_gpushare40.csv")[1]) == 7
