# batsched-ml as a Nix package (Python 3.11 from the pinned nixpkgs; procset from nur-kapack).
#   nix-build nix/default.nix && ./result/bin/batsched-ml --help
{ pins ? import ./pins.nix
, pkgs ? pins.pkgs
, kapack ? pins.kapack
}:
let
  ps = pkgs.python311.pkgs;
  root = ../.;
  # Only what the package needs: a change in tests/ or benchmarks/ does not rebuild it.
  keep = [ "pyproject.toml" "README.md" "batsched_ml" ];
in
ps.buildPythonPackage {
  pname = "batsched-ml";
  # batsched_ml/__init__.py's __version__: the one place the version is set
  version = builtins.head (builtins.match "__version__ = \"(.*)\"" (builtins.head (builtins.filter
    (line: pkgs.lib.hasPrefix "__version__ = " line) (pkgs.lib.splitString "\n" (builtins.readFile ../batsched_ml/__init__.py)))));
  format = "pyproject";
  src = pkgs.lib.cleanSourceWith {
    src = root;
    filter = path: type:
      let rel = pkgs.lib.removePrefix (toString root + "/") (toString path);
      in builtins.any (k: rel == k || pkgs.lib.hasPrefix (k + "/") rel) keep
         && !(pkgs.lib.hasSuffix ".pyc" rel) && baseNameOf path != "__pycache__";
  };
  nativeBuildInputs = [ ps.setuptools ps.wheel ];
  # pyproject.toml's dependencies, one for one (tests/test_deployment.py checks the two lists)
  propagatedBuildInputs = [
    ps.numpy
    ps.pyzmq
    kapack.procset
    ps.scikit-learn
    ps.scipy
    ps.sortedcontainers
    ps.tqdm
    ps.dask
    ps.distributed
    ps.numba
    ps.matplotlib
    ps.tomli-w
    ps.gymnasium
    ps.greenlet
    ps.cma
    ps.zstandard
  ];
  doCheck = false; # the tests run in nix-shell (they need the golden files)
  pythonImportsCheck = [ "batsched_ml.server.serve" ];
}
