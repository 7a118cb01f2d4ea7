// Cluster files: the built-ins in SI units, files by path, --set overrides, and errors of one line naming
// FILE:LINE:COLUMN: field, `--set KEY` or the flag.
#include "cluster_error.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <gtest/gtest.h>

namespace gputwin::topo {
namespace {

const std::string data_dir = GPUTWIN_TEST_DATA_DIR "/clusters/";

using testing::error_of;

TEST(ClusterSpec, BuiltinNames)
{
  EXPECT_EQ(builtin_cluster_names(), "dgx-a100, dgx-b200, dgx-b300, dgx-h100, dgx-h200, gb200-nvl72, gb300-nvl72, localhost, nd-a100-v4");
}

TEST(ClusterSpec, DgxA100InSiUnits)
{
  const ClusterSpec s = load_cluster("dgx-a100", 0, {});
  EXPECT_EQ(s.name, "dgx-a100");
  EXPECT_EQ(s.source, "<built-in dgx-a100>");
  EXPECT_EQ(s.nodes, 1);
  EXPECT_EQ(s.gpu.kind, "a100-sxm4-80gb");
  EXPECT_DOUBLE_EQ(s.gpu.peak_bf16_flops, 312e12);
  EXPECT_EQ(s.gpu.hbm_bytes, 81920LL << 20); // 81920 MiB, as nvidia-smi reports it
  EXPECT_DOUBLE_EQ(s.gpu.hbm_bytes_per_s, 2039e9);
  EXPECT_EQ(s.gpus_per_node, 8);
  EXPECT_DOUBLE_EQ(s.nvlink.bytes_per_s, 300e9);
  EXPECT_DOUBLE_EQ(s.nvlink.latency_s, 0.35e-6);
  EXPECT_EQ(s.nvlink.switch_chips, 6);
  EXPECT_DOUBLE_EQ(s.pcie.bytes_per_s, 31.5e9);
  EXPECT_DOUBLE_EQ(s.pcie.latency_s, 0.5e-6);
  EXPECT_EQ(s.pcie.switches_per_node, 4);
  EXPECT_EQ(s.nic.count, 8);
  EXPECT_DOUBLE_EQ(s.nic.bytes_per_s, 25e9); // 200 Gb/s
  EXPECT_DOUBLE_EQ(s.nic.latency_s, 1e-6);
  const std::vector<std::vector<int>> one_per_gpu = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}};
  EXPECT_EQ(s.nic.gpus, one_per_gpu);
  EXPECT_EQ(s.fabric.levels, 3);
  EXPECT_EQ(s.fabric.switch_radix, 40);
  EXPECT_DOUBLE_EQ(s.fabric.oversubscription, 1);
  EXPECT_TRUE(s.fabric.rail_optimized);
  EXPECT_DOUBLE_EQ(s.fabric.link_bytes_per_s, 25e9);
  EXPECT_DOUBLE_EQ(s.fabric.switch_latency_s, 0.13e-6);
  EXPECT_DOUBLE_EQ(s.nccl.nvlink_efficiency, 0.77);
  EXPECT_DOUBLE_EQ(s.nccl.pcie_efficiency, 0.8);
  EXPECT_DOUBLE_EQ(s.nccl.net_efficiency, 0.96);
  EXPECT_EQ(s.gpus(), 8);
}

// NCCL's software and kernel costs are the A100 fit to Echo's logs (nd-a100-v4.yaml, written by `gputwin calibrate
// --nccl-tests`); the code's defaults state the same figures so that every cluster without a fit of its own gets
// them. Refitting nd-a100-v4 without the defaults (or the reverse) fails here.
TEST(ClusterSpec, NcclDefaultsAreTheFitOfNdA100V4)
{
  const NcclSpec defaults;
  const NcclSpec fit = load_cluster("nd-a100-v4", 0, {}).nccl;
  EXPECT_EQ(defaults.channels_intra_node, fit.channels_intra_node);
  EXPECT_EQ(defaults.channels_inter_node, fit.channels_inter_node);
  EXPECT_DOUBLE_EQ(defaults.host_call_s, fit.host_call_s);
  EXPECT_DOUBLE_EQ(defaults.host_launch_s_per_gpu, fit.host_launch_s_per_gpu);
  EXPECT_DOUBLE_EQ(defaults.kernel_s, fit.kernel_s);
  EXPECT_DOUBLE_EQ(defaults.channel_s, fit.channel_s);
  EXPECT_DOUBLE_EQ(defaults.channel_net_step_s, fit.channel_net_step_s);
  EXPECT_EQ(defaults.tree_correction, fit.tree_correction);
  for (const auto& [d, f] : {std::pair{defaults.ll, fit.ll}, {defaults.ll128, fit.ll128}, {defaults.simple, fit.simple}}) {
    EXPECT_DOUBLE_EQ(d.base_latency_s, f.base_latency_s);
    EXPECT_DOUBLE_EQ(d.nvlink_step_s, f.nvlink_step_s);
    EXPECT_DOUBLE_EQ(d.net_step_s, f.net_step_s);
    EXPECT_DOUBLE_EQ(d.channel_bytes_per_s, f.channel_bytes_per_s);
  }
  // dgx-a100 states only its link efficiencies: the rest is the fit.
  const NcclSpec dgx = load_cluster("dgx-a100", 0, {}).nccl;
  EXPECT_DOUBLE_EQ(dgx.kernel_s, fit.kernel_s);
  EXPECT_DOUBLE_EQ(dgx.simple.base_latency_s, fit.simple.base_latency_s);
  EXPECT_TRUE(dgx.tree_correction);
}

TEST(ClusterSpec, DgxH100AndH200)
{
  const ClusterSpec h100 = load_cluster("dgx-h100", 0, {});
  EXPECT_DOUBLE_EQ(h100.gpu.peak_bf16_flops, 989e12);
  EXPECT_EQ(h100.gpu.hbm_bytes, 81559LL << 20);
  EXPECT_DOUBLE_EQ(h100.gpu.hbm_bytes_per_s, 3350e9);
  EXPECT_DOUBLE_EQ(h100.nvlink.bytes_per_s, 450e9);
  EXPECT_EQ(h100.nvlink.switch_chips, 4);
  EXPECT_DOUBLE_EQ(h100.pcie.bytes_per_s, 63e9);
  EXPECT_DOUBLE_EQ(h100.nic.bytes_per_s, 50e9); // 400 Gb/s
  EXPECT_EQ(h100.fabric.switch_radix, 64);
  EXPECT_DOUBLE_EQ(h100.fabric.link_bytes_per_s, 50e9);
  EXPECT_DOUBLE_EQ(h100.nccl.nvlink_efficiency, 0.822);
  EXPECT_DOUBLE_EQ(h100.nccl.net_efficiency, 0.97);

  const ClusterSpec h200 = load_cluster("dgx-h200", 0, {});
  EXPECT_EQ(h200.gpu.kind, "h200-sxm-141gb");
  EXPECT_EQ(h200.gpu.hbm_bytes, 143771LL << 20);
  EXPECT_DOUBLE_EQ(h200.gpu.hbm_bytes_per_s, 4800e9);
  EXPECT_DOUBLE_EQ(h200.nvlink.bytes_per_s, h100.nvlink.bytes_per_s);
  EXPECT_DOUBLE_EQ(h200.nic.bytes_per_s, h100.nic.bytes_per_s);
}

// GB200 NVL72: a node is a compute tray of 4 GPUs and 4 NDR NICs (one per GPU); 18 trays share a rack's NVLink 5
// domain (nvlink_domain_test.cpp: routes and errors).
TEST(ClusterSpec, Gb200Nvl72IsTraysOfFourGpusInRackDomains)
{
  const ClusterSpec s = load_cluster("gb200-nvl72", 36, {});
  EXPECT_EQ(s.gpu.kind, "gb200");
  EXPECT_EQ(s.gpus_per_node, 4);
  EXPECT_EQ(s.gpus(), 144);
  EXPECT_EQ(s.nvlink.domain_gpus, 72);
  EXPECT_EQ(s.nvlink_domains(), 2);
  EXPECT_DOUBLE_EQ(s.nvlink.bytes_per_s, 900e9); // per GPU, per direction
  EXPECT_EQ(s.nvlink.switch_chips, 18);          // per domain
  EXPECT_EQ(s.nic.count, 4);
  EXPECT_DOUBLE_EQ(s.nic.bytes_per_s, 50e9); // ConnectX-7, 400 Gb/s
  EXPECT_DOUBLE_EQ(s.gpu.peak_bf16_flops, 2450e12);
  EXPECT_DOUBLE_EQ(s.gpu.hbm_bytes_per_s, 8000e9);
}

// A job's trays in equal segments, one per rack (node.nvlink.segments, NVIDIA's launcher): the greatest divisor of
// its trays <= 18 -- 16 trays (64 GPUs) per rack for 32 or 64 trays, 17 for 34, 18 for 36 or 72, one rack below
// 19; without the rule, trays fill racks in order (a 32-tray job: racks of 18 and 14).
TEST(ClusterSpec, Nvl72JobsTakeEqualSegmentsOfRacks)
{
  for (const auto& [trays, segment] : std::vector<std::pair<int, int>>{
           {32, 16}, {64, 16}, {34, 17}, {36, 18}, {72, 18}, {12, 12}, {18, 18}, {19, 1}, {38, 2}}) {
    const ClusterSpec s = load_cluster("gb200-nvl72", trays, {});
    EXPECT_TRUE(s.nvlink.segments);
    EXPECT_EQ(s.nvlink.domain_gpus, 4 * segment) << trays << " trays";
    EXPECT_EQ(s.nvlink_domains(), trays / segment) << trays << " trays";
  }
  const ClusterSpec filled = load_cluster("gb200-nvl72", 32, {"node.nvlink.segments=false"});
  EXPECT_EQ(filled.nvlink.domain_gpus, 72);
  EXPECT_EQ(filled.nvlink_domains(), 2);
  EXPECT_FALSE(load_cluster("dgx-b200", 4, {}).nvlink.segments); // node-sized domains: nothing to segment
  EXPECT_EQ(load_cluster("gb300-nvl72", 32, {}).nvlink.domain_gpus, 64);
}

TEST(ClusterSpec, FileByPathAndNodes)
{
  const ClusterSpec tiny = load_cluster(data_dir + "tiny.yaml", 0, {});
  EXPECT_EQ(tiny.name, "tiny");
  EXPECT_EQ(tiny.source, data_dir + "tiny.yaml");
  EXPECT_EQ(tiny.nodes, 2);
  EXPECT_FALSE(tiny.fabric.rail_optimized);
  EXPECT_DOUBLE_EQ(tiny.nic.bytes_per_s, 10e9); // 80 Gb/s
  EXPECT_EQ(load_cluster(data_dir + "tiny.yaml", 7, {}).nodes, 7);
  EXPECT_EQ(load_cluster("dgx-a100", 64, {}).gpus(), 512);
}

TEST(ClusterSpec, SetOverridesChangeValues)
{
  const ClusterSpec s =
      load_cluster("dgx-a100", 0,
                   {"node.nvlink.gbytes_per_s=250", "fabric.rail_optimized=false", "nodes=4", "node.nics.count=4",
                    "node.nics.gpus=[[0, 1], [2, 3], [4, 5], [6, 7]]", "name=my-a100", "nccl.net_efficiency=0.9"});
  EXPECT_DOUBLE_EQ(s.nvlink.bytes_per_s, 250e9);
  EXPECT_FALSE(s.fabric.rail_optimized);
  EXPECT_EQ(s.nodes, 4);
  EXPECT_EQ(s.nic.count, 4);
  EXPECT_EQ(s.nic.gpus[3], (std::vector<int>{6, 7}));
  EXPECT_EQ(s.name, "my-a100");
  EXPECT_DOUBLE_EQ(s.nccl.net_efficiency, 0.9);
  // A list element by index; the last --set of a key wins; --nodes wins over the file's nodes.
  const ClusterSpec t = load_cluster(data_dir + "tiny.yaml", 3,
                                     {"node.nics.gpus.1=[3, 2]", "nodes=5", "fabric.levels=2", "fabric.levels=3"});
  EXPECT_EQ(t.nic.gpus[1], (std::vector<int>{3, 2}));
  EXPECT_EQ(t.fabric.levels, 3);
  EXPECT_EQ(t.nodes, 3);
}

TEST(ClusterSpec, FileErrorsNameFileLineColumnAndField)
{
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"missing-field.yaml",
       "missing-field.yaml:13:5: node.nvlink: missing field 'latency_us' (expected a number >= 0)"},
      {"negative-field.yaml", "negative-field.yaml:17:19: node.pcie.gbytes_per_s: expected a positive number, got -20"},
      {"mistyped-field.yaml",
       "mistyped-field.yaml:13:19: node.nvlink.gbytes_per_s: expected a positive number, got 'fast'"},
      {"unknown-field.yaml", "unknown-field.yaml:13:5: node.nvlink.gbytes_per_sec: unknown field (expected one of "
                             "gbytes_per_s, latency_us, nvswitch_chips, domain_gpus, segments)"},
      {"bad-rail-map.yaml",
       "bad-rail-map.yaml:24:24: node.nics.gpus.1.1: expected a local GPU index from 0 to 3, got 7"},
  };
  for (const auto& [file, expected] : cases)
    EXPECT_EQ(error_of(data_dir + file, 0, {}), data_dir + expected);
  const std::string malformed = error_of(data_dir + "malformed.yaml", 0, {});
  EXPECT_EQ(malformed.rfind(data_dir + "malformed.yaml:", 0), 0u) << malformed;
  EXPECT_NE(malformed.find(": malformed YAML: "), std::string::npos) << malformed;
}

// The GPU's generation (what the built-in compute model and NCCL's tuning go by) is stated, not guessed from the
// kind: every built-in says it, a file without it or with another value is an error naming the field.
TEST(ClusterSpec, GpuGenerationIsAFieldOfTheFile)
{
  EXPECT_EQ(load_cluster("dgx-a100", 0, {}).gpu.generation, GpuGeneration::Ampere);
  EXPECT_EQ(load_cluster("nd-a100-v4", 0, {}).gpu.generation, GpuGeneration::Ampere);
  EXPECT_EQ(load_cluster("dgx-h100", 0, {}).gpu.generation, GpuGeneration::Hopper);
  EXPECT_EQ(load_cluster("dgx-h200", 0, {}).gpu.generation, GpuGeneration::Hopper);
  EXPECT_EQ(load_cluster("localhost", 0, {}).gpu.generation, GpuGeneration::Cpu);
  // A kind that names no known part is fine: the generation decides.
  const ClusterSpec renamed = load_cluster("dgx-h100", 0, {"gpu.kind=my-hopper-part"});
  EXPECT_EQ(renamed.gpu.generation, GpuGeneration::Hopper);
  const std::string bad = error_of("dgx-a100", 0, {"gpu.generation=volta"});
  EXPECT_NE(bad.find("gpu.generation"), std::string::npos) << bad;
  EXPECT_NE(bad.find("expected ampere, hopper, blackwell or cpu, got 'volta'"), std::string::npos) << bad;
}

TEST(ClusterSpec, FlagAndSetErrorsNameTheFlag)
{
  const std::vector<std::tuple<std::string, int, std::vector<std::string>, std::string>> cases = {
      {"dgx-a999",
       0,
       {},
       "--cluster: unknown cluster 'dgx-a999' (expected one of dgx-a100, dgx-b200, dgx-b300, dgx-h100, dgx-h200, gb200-nvl72, gb300-nvl72, localhost, nd-a100-v4, or a cluster .yaml "
       "file)"},
      {"dgx-a100", -1, {}, "--nodes: expected a positive number of nodes, got -1"},
      {"dgx-a100",
       0,
       {"node.nvlink.gbytes_per_sec=3"},
       "--set node.nvlink.gbytes_per_sec: unknown key (expected one of gbytes_per_s, latency_us, nvswitch_chips)"},
      {"dgx-a100",
       0,
       {"node.nvlink.gbytes_per_s"},
       "--set node.nvlink.gbytes_per_s: expected path.to.key=value (e.g. --set node.nvlink.gbytes_per_s=250)"},
      {"dgx-a100",
       0,
       {"node.nvlink.gbytes_per_s=fast"},
       "--set node.nvlink.gbytes_per_s: expected a positive number, got 'fast'"},
      {"dgx-a100", 0, {"node.pcie.latency_us=-1"}, "--set node.pcie.latency_us: expected a number >= 0, got -1"},
      {"dgx-a100", 0, {"fabric.rail_optimized=yes"}, "--set fabric.rail_optimized: expected true or false, got 'yes'"},
      {"dgx-a100",
       0,
       {"node.pcie.switches=3"},
       "--set node.pcie.switches: 3 does not divide 8 GPUs per node (expected a divisor of node.gpus)"},
      {"dgx-a100",
       0,
       {"node.nics.gpus.9=[1]"},
       "--set node.nics.gpus.9: unknown key (expected an index from 0 to 7 of the list node.nics.gpus)"},
      {"dgx-a100",
       0,
       {"node.nics.gpus.3.0=8"},
       "--set node.nics.gpus.3.0: expected a local GPU index from 0 to 7, got 8"},
      {"dgx-a100",
       0,
       {"node.nics.gpus=[[0], [1]]"},
       "--set node.nics.gpus: expected 8 entries (one list of local GPUs per NIC, node.nics.count), got 2"},
      {"dgx-a100",
       0,
       {"node.nics.gpus.7=[6]"},
       "dgx-a100.yaml (built-in):31:11: node.nics.gpus (with --set node.nics.gpus.7): local GPU 7 is served by no "
       "NIC (expected every GPU in some NIC's list)"},
      {"dgx-a100",
       0,
       {"node.nvlink={gbytes_per_s: 3}"},
       "--set node.nvlink: missing field 'latency_us' (expected a number >= 0)"},
      {"dgx-a100",
       0,
       {"nccl.net_efficiency=1.5"},
       "--set nccl.net_efficiency: expected a fraction of line rate in (0, 1], got 1.5"},
      {"dgx-a100",
       0,
       {"fabric.switch_radix=1"},
       "--set fabric.switch_radix: expected an integer from 2 to 4096, got 1"},
      {"dgx-a100",
       0,
       {"nodes.count=2"},
       "--set nodes.count: unknown key (nodes is a value, not a mapping; expected a key of the cluster file)"},
  };
  for (const auto& [cluster, nodes, sets, expected] : cases)
    EXPECT_EQ(error_of(cluster, nodes, sets), expected);
  EXPECT_EQ(error_of("dgx-a100", 0, {"node.gpus=[8"}).rfind("--set node.gpus: malformed value '[8' (", 0), 0u);
}

TEST(ClusterSpec, TooManyNodesForTheLevelsNamesTheMaximum)
{
  // dgx-a100: leaves of radix 40 have 20 ports down; 8 rails. 2 levels: at most 40 leaves = 5 per rail = 100
  // nodes; 3 levels: at most 40 pods of 20 leaves = 800 leaves = 100 per rail = 2000 nodes.
  EXPECT_EQ(error_of("dgx-a100", 101, {"fabric.levels=2"}),
            "--set fabric.levels: 101 nodes do not fit 2 levels of radix-40 switches (expected --nodes at most 100, "
            "or more fabric.levels)");
  EXPECT_EQ(error_of("dgx-a100", 2001, {}),
            "dgx-a100.yaml (built-in):34:11: fabric.levels: 2001 nodes do not fit 3 levels of radix-40 switches "
            "(expected --nodes at most 2000, or a larger fabric.switch_radix)");
  EXPECT_EQ(load_cluster("dgx-a100", 2000, {}).nodes, 2000);
  EXPECT_EQ(load_cluster("dgx-a100", 100, {"fabric.levels=2"}).nodes, 100);
  // tiny, one level: the single leaf has 2 ports down, the 2 NICs of one node.
  EXPECT_EQ(error_of(data_dir + "tiny.yaml", 2, {"fabric.levels=1"}),
            "--set fabric.levels: 2 nodes do not fit 1 level of radix-4 switches (expected --nodes at most 1, or "
            "more fabric.levels)");
}

} // namespace
} // namespace gputwin::topo
