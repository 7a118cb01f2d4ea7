#pragma once
// Measured NCCL bus bandwidths (nccl-tests definitions) the collectives are validated against, with sources.
// Copied from the project's reference notes (hardware.md), so the project stands on its own.

namespace gputwin::reference {

// 8x A100 in one DGX, all-reduce, >= 8 GB messages: about 230 GB/s busbw (12 NVLinks x ~20 GB/s effective).
// NCCL maintainer, NVIDIA/nccl-tests issue 149 (232.5 GB/s up to 4 GB: nccl-tests issue 175).
inline constexpr double a100_node_allreduce_busbw_gbps = 230;
// Many DGX A100 nodes, 8x HDR each, all-reduce: 192 GB/s busbw. NCCL maintainer, NVIDIA/nccl issue 812.
inline constexpr double a100_multinode_allreduce_busbw_gbps = 192;
// One HDR InfiniBand NIC (200 Gb/s): about 24 GB/s. NVIDIA/nccl issue 1048.
inline constexpr double hdr_nic_sendrecv_busbw_gbps = 24;
// 8x H100, ring collectives: about 370 GB/s (450 GB/s line rate, ~20% protocol overhead).
// NCCL maintainer, NVIDIA/nccl-tests issue 212.
inline constexpr double h100_node_ring_busbw_gbps = 370;
// 8x H100, NVLS (NVLink SHARP) all-reduce, > 256 MB: about 480 GB/s busbw (algbw ~275 GB/s). Same source (NCCL
// maintainer, NVIDIA/nccl-tests issue 212; NVIDIA GTC 2024 talk S62129 quotes 480 GB/s, NVIDIA/nccl issue 1374).
inline constexpr double h100_node_nvls_allreduce_busbw_gbps = 480;
// A whole GB200 NVL72 rack (72 GPUs, one multi-node NVLink domain), all-reduce, 8 GiB: 834.57 GB/s busbw
// out-of-place, 846.82 in-place (4 GiB: 839.16 / 835.32). CoreWeave's nccl-tests run on a full NVL72 rack,
// coreweave/nccl-tests pull request 43 ("Add a GB200 NVL72 example", 2025-02-20).
inline constexpr double gb200_nvl72_rack_allreduce_8gib_busbw_gbps = (834.57 + 846.82) / 2;

} // namespace gputwin::reference
