# The environment NCCL needs on a cluster, sourced by the sbatch templates.
# Every value can be set before sbatch (Slurm passes the environment on);
# what is set here is a default for InfiniBand clusters of DGX/HGX nodes.

# The network interface for NCCL's bootstrap and socket traffic: NCCL's own
# choice unless named (e.g. ib0, eth0, enp*). Unset, NCCL prefers ib*
# interfaces and falls back to any but lo, docker* and virbr*; a filter set
# here would replace that preference, and on nodes whose first interface is
# not reachable from the others (a BMC or management port) the communicator
# would never form.
[[ -n ${NCCL_SOCKET_IFNAME:-} ]] && export NCCL_SOCKET_IFNAME
# The InfiniBand HCAs (ports) NCCL may use: every mlx5 device by default; list
# them (mlx5_0:1,mlx5_1:1,...) to pin one port per GPU.
export NCCL_IB_HCA=${NCCL_IB_HCA:-mlx5}
# RoCE needs the GID index of the RoCE v2 address (often 3); InfiniBand none.
[[ -n ${NCCL_IB_GID_INDEX:-} ]] && export NCCL_IB_GID_INDEX
# GPUDirect RDMA between a GPU and a NIC: PHB allows it through the CPU's
# host bridge too (NCCL's default is stricter: the same PCIe switch, PXB);
# on platforms where that path is slow, set PXB.
export NCCL_NET_GDR_LEVEL=${NCCL_NET_GDR_LEVEL:-PHB}
# Warnings and what NCCL chose at init (rings, trees, transports) in the log;
# INFO prints the topology, TRACE is for NVIDIA support.
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
export NCCL_DEBUG_SUBSYS=${NCCL_DEBUG_SUBSYS:-INIT,NET}
# A longer InfiniBand retry timeout than NCCL's default (4.096 us x 2^22,
# about 17 s a retry, against 2^20, about 4 s), so that congestion on a large
# job is not taken for a lost link. A lost peer does not wait for it: the DDP
# watchdog (--ddp-timeout, 30 s) polls ncclCommGetAsyncError and the
# reductions' completion and aborts the communicator with one line.
export NCCL_IB_TIMEOUT=${NCCL_IB_TIMEOUT:-22}
# Open MPI under srun: no own launcher, PMIx from Slurm; do not let it bind
# a rank's OpenMP threads to one core.
export OMPI_MCA_hwloc_base_binding_policy=${OMPI_MCA_hwloc_base_binding_policy:-none}
