#!/usr/bin/env bash
cd .carry/tma
timeout 300 ncu --kernel-name regex:"new_n_128x128_3$|new_c_128x128_3_np$" --launch-count 2 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section Occupancy ./harness > $OUT/ncu.txt 2>&1
echo "rc=$?"; grep -E "==PROF==|new_|Duration|Compute \(SM\) Throughput|Memory Throughput|Issue Slots Busy|Issued Ipc|No Eligible|Stall|Warp Cycles Per Issued|Tensor|Registers|Achieved Occupancy" $OUT/ncu.txt | head -60
