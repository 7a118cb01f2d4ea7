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

} // namespace gputwin::reference
