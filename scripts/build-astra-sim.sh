#!/usr/bin/env bash
# Build ASTRA-sim's analytical (congestion-unaware) binary from a local checkout, without network access, for
# scripts/astra-sim-interop.sh (issue 32). CI never runs this: it needs the ASTRA-sim sources, which CI cannot fetch.
#
#   scripts/build-astra-sim.sh ASTRA_SIM_SRC [BUILD_DIR]
#
# ASTRA_SIM_SRC: an astra-sim checkout (tested: astra-sim 518bd51) with its submodules in place:
#   extern/graph_frontend/chakra           the `stage` branch of astra-sim/chakra (feeder_v3; tested f37c2bb)
#   extern/network_backend/analytical      astra-sim/astra-network-analytical (tested 599a047)
#   extern/remote_memory_backend/analytical astra-sim/astra-memory-analytical (tested 641cce8)
# The chakra submodule needs only src/ and schema/ (a clone whose large test files are missing builds: `git restore
# --source=HEAD -- src schema` there). fmt, spdlog and yaml-cpp come from Debian (libfmt-dev, libspdlog-dev,
# libyaml-cpp-dev, installed here), so extern/helper/{fmt,spdlog} and the analytical backend's extern/yaml-cpp may be
# empty.
#
# What is changed in the checkout (idempotent, each edit says why):
#   - CMakeLists.txt: find_package(fmt, spdlog, yaml-cpp) instead of add_subdirectory of the helper submodules and
#     FetchContent of yaml-cpp (no network);
#   - the analytical backend adds yaml-cpp only if no target of that name exists (it would be added twice);
#   - chakra feeder_v3/et_feeder.h: Chakra::ETFeeder / Chakra::ETFeederNode aliases of the FeederV3 classes
#     (astra-sim 518bd51's Statistics.hh and LocalMemUsageTracker.hh name them without the FeederV3 namespace);
#   - et_def.proto compiled with Debian's protoc into the chakra schema directory.
# Prints the path of the built binary (BUILD_DIR/bin/AstraSim_Analytical_Congestion_Unaware) on its last line.
set -euo pipefail

die() { echo "build-astra-sim.sh: $*" >&2; exit 2; }

[[ $# -ge 1 && $# -le 2 ]] || die "usage: scripts/build-astra-sim.sh ASTRA_SIM_SRC [BUILD_DIR]"
src=$(realpath "$1") || die "$1: no such directory"
build=${2:-$src/build/astra_analytical/build}
chakra=$src/extern/graph_frontend/chakra
analytical=$src/extern/network_backend/analytical
for f in "$src/CMakeLists.txt" "$src/build/astra_analytical/CMakeLists.txt" "$chakra/schema/protobuf/et_def.proto" \
         "$chakra/src/feeder_v3/et_feeder.h" "$analytical/CMakeLists.txt" \
         "$src/extern/remote_memory_backend/analytical/AnalyticalRemoteMemory.cc"; do
  [[ -f $f ]] || die "$f: missing (is ASTRA_SIM_SRC an astra-sim checkout with its submodules?)"
done

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
install_packages_if_missing g++ cmake make libfmt-dev libspdlog-dev libyaml-cpp-dev libprotobuf-dev protobuf-compiler >&2

python3 - "$src/CMakeLists.txt" "$analytical/CMakeLists.txt" "$chakra/src/feeder_v3/et_feeder.h" <<'EOF'
import re, sys
top, analytical, feeder = sys.argv[1:4]

def edit(path, old, new, done_marker):
    text = open(path).read()
    if done_marker in text:
        return
    if isinstance(old, re.Pattern):
        text, n = old.subn(new, text, count=1)
        if n != 1:
            sys.exit(f"build-astra-sim.sh: {path}: expected text not found: {old.pattern[:60]!r}")
    elif old in text:
        text = text.replace(old, new, 1)
    else:
        sys.exit(f"build-astra-sim.sh: {path}: expected text not found: {old[:60]!r}")
    open(path, "w").write(text)

# Helper libraries from the system (no submodule sources, no network for FetchContent).
edit(top, re.compile(r'add_subdirectory\("\$\{CMAKE_CURRENT_SOURCE_DIR\}/extern/helper/fmt"\).*?FetchContent_MakeAvailable\(yaml-cpp\)', re.S),
     "# gputwin scripts/build-astra-sim.sh: system fmt, spdlog, yaml-cpp\n"
     "find_package(fmt REQUIRED)\nfind_package(spdlog REQUIRED)\nfind_package(yaml-cpp REQUIRED)",
     "gputwin scripts/build-astra-sim.sh")
# yaml-cpp is already a target when the backend is built inside ASTRA-sim.
edit(analytical, "add_subdirectory(${CMAKE_CURRENT_SOURCE_DIR}/extern/yaml-cpp yaml-cpp)",
     "if (NOT TARGET yaml-cpp)  # gputwin scripts/build-astra-sim.sh\n"
     "    find_package(yaml-cpp REQUIRED)\nendif ()",
     "gputwin scripts/build-astra-sim.sh")
# Statistics.hh / LocalMemUsageTracker.hh name the feeder classes outside the FeederV3 namespace.
edit(feeder, "} // namespace FeederV3\n} // namespace Chakra",
     "} // namespace FeederV3\n"
     "using FeederV3::ETFeeder;      // gputwin scripts/build-astra-sim.sh\n"
     "using FeederV3::ETFeederNode;\n"
     "} // namespace Chakra",
     "gputwin scripts/build-astra-sim.sh")
EOF

proto=$chakra/schema/protobuf
if [[ ! -f $proto/et_def.pb.cc || $proto/et_def.proto -nt $proto/et_def.pb.cc ]]; then
  (cd "$proto" && protoc et_def.proto --proto_path=. --cpp_out=.)
fi

mkdir -p "$build"
cmake -S "$src/build/astra_analytical" -B "$build" -DBUILDTARGET=congestion_unaware -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$(nproc)" >&2
bin=$build/bin/AstraSim_Analytical_Congestion_Unaware
[[ -x $bin ]] || bin=$(dirname "$build")/bin/AstraSim_Analytical_Congestion_Unaware
[[ -x $bin ]] || die "the build finished but AstraSim_Analytical_Congestion_Unaware is not under $build"
echo "$bin"
