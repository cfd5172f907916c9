# Batsim 5.0.0-rc2 (tag v5.0.0-rc2 = commit ba7ea85f on Batsim's `main`) from Batsim's own flake:
# its flake.lock pins nixpkgs, SimGrid (nur-kapack), batprotocol (framagit 2800ed5c) and
# intervalset. Batsim 4.2 stays nix/shell.nix's (nur-kapack has no Batsim 5 package). Needs flakes:
#   nix-build nix/batsim5.nix -A batsim --extra-experimental-features 'nix-command flakes'
#   ./result/bin/batsim --version                          # 5.0.0-rc2
# -A batsim-edc-libs: Batsim's test decision components, among them process-edc (C++ FCFS over ZeroMQ).
# Then, with the scheduler bound first (it recognises Batsim 5 by its first frame):
#   batsched-ml serve -s tcp://127.0.0.1:28000 --batsim 5 &
#   ./result/bin/batsim -p platforms/cluster-100.xml -w WORKLOAD.v5.json -e out/v5/ \
#       --edc-socket-str tcp://127.0.0.1:28000 '{}'
let
  rev = "ba7ea85fa20e81415e2f52290b56120192504553";
  flake = builtins.getFlake "github:oar-team/batsim/${rev}";
  packages = flake.packages.${builtins.currentSystem};
in
{
  inherit (packages) batsim batsim-edc-libs;
}
