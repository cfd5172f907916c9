# Pinned sources of the nix/ files: nixpkgs 23.11 (Python 3.11) and nur-kapack at a commit that
# still provides Batsim 4.2 (batsim-420, SimGrid 3.34), batsched 1.4.0 and pybatsim 3.2.1.
rec {
  # The same nixpkgs release nur-kapack pins itself at this commit (its default.nix).
  nixpkgsSrc = fetchTarball {
    url = "https://github.com/NixOS/nixpkgs/archive/23.11.tar.gz";
    sha256 = "1ndiv385w1qyb3b18vw13991fzb9wg4cl21wglk89grsfsnra41k";
  };
  pkgs = import nixpkgsSrc { };

  kapackSrc = fetchTarball {
    url = "https://github.com/oar-team/nur-kapack/archive/052fb35eb29228d9e4ea8afa09e9f0e390782cbd.tar.gz";
    sha256 = "0bvsgm5wv5zh3isi51sxhyryxh6g0x29id4f68c07nwvsq6qlmr9";
  };
  kapack = import kapackSrc { inherit pkgs; };
}
