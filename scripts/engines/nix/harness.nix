# Developer harness (not CI): evaluates an emitted rocm-overlay.nix against the real nixpkgs `lib`
# and the real rocm-modules scope expression, read by scripts/engines/nix/run.sh into a tree.
#
# Real: `lib` (a nixpkgs.lib checkout), the scope file (rocm-modules/6/default.nix) and every
# rocm-modules package file present in the tree. Stubbed (this file): every input from outside
# rocm-modules (stdenv.mkDerivation, fetchers, cmake, boost, python packages ...), and the rocm
# LLVM set (rocm-modules/6/llvm), which the scope calls with the top-level callPackage. A package
# file that was not read makes its attribute throw "not read: <path>", which the report shows per
# attribute instead of failing the whole evaluation.
{
  libPath,
  scopeFile,
  overlayFile,
  # Attributes of rocmPackages to report.
  attrs,
  # Stand-in for a file the store does not hold at this release: when non-null, clr's version
  # is replaced before the overlay runs (reported as such by run.sh).
  clrVersion ? null,
}:
let
  lib = import libPath;

  # A derivation-shaped value for an input from outside rocm-modules: callable (fetchers,
  # runCommand, writeShellScriptBin) and answering the attributes the ROCm expressions read.
  stub =
    name:
    let
      self = {
        type = "derivation";
        inherit name;
        outPath = "/nix/store/00000000000000000000000000000000-stub-${name}";
        drvPath = "/nix/store/00000000000000000000000000000000-stub-${name}.drv";
        __functor = s: _: s;
        override = _: self;
        overrideAttrs = _: self;
        withPackages = _: self;
        dev = self;
        out = self;
        src = self;
        bin = self;
        lib = self;
        python = self;
        cppheaderparser = self;
        bintools = self;
        meta = { };
      };
    in
    self;

  # stdenv.mkDerivation reduced to what evaluation needs: the attribute set (with finalAttrs),
  # passthru lifted to the top as the real one does, an outPath, and overrideAttrs.
  mkDerivation =
    fpargs:
    let
      mk =
        f:
        let
          attrs' = lib.fix (
            final: (if builtins.isFunction f then f final else f) // { finalPackage = result; }
          );
          result =
            attrs'
            // (attrs'.passthru or { })
            // {
              type = "derivation";
              name = attrs'.name or "${attrs'.pname}-${attrs'.version}";
              outPath = "/nix/store/00000000000000000000000000000000-${result.name}";
              drvPath = "/nix/store/00000000000000000000000000000000-${result.name}.drv";
              overrideAttrs =
                g:
                mk (
                  final:
                  let
                    prev = if builtins.isFunction f then f final else f;
                    g' = if builtins.isFunction (g prev) then g final prev else g prev;
                  in
                  prev // g'
                );
            };
        in
        result;
    in
    mk fpargs;

  stdenv = (stub "stdenv") // {
    inherit mkDerivation;
    cc = (stub "cc") // { version = "stub"; };
    hostPlatform = { isLinux = true; };
  };

  # The rocm LLVM set is a rocm-modules file of its own (llvm/default.nix); stubbed, see above.
  llvm = (stub "rocm-llvm") // {
    rocmClangStdenv = stdenv;
    rocm-merged-llvm = stub "rocm-merged-llvm";
    clang = stub "rocm-clang";
    openmp = stub "rocm-openmp";
    mlir = stub "rocm-mlir";
    clang-tools-extra = stub "rocm-clang-tools-extra";
    rocm-toolchain = stub "rocm-toolchain";
    llvm = stub "rocm-llvm-llvm";
  };

  # nixpkgs' newScope is `extra: callPackageWith (pkgs // extra)`. Here `pkgs` is one stub per
  # required argument (those without a default) that the scope does not provide, and a package
  # file that is absent throws instead of aborting evaluation.
  newScope =
    extra: fn: args:
    let
      isDir = builtins.pathExists fn && (builtins.readDir (dirOf fn)).${baseNameOf fn} == "directory";
      missing =
        builtins.isPath fn
        && !(builtins.pathExists fn && (!isDir || builtins.pathExists (fn + "/default.nix")));
      f = if builtins.isFunction fn then fn else import fn;
      required = lib.filterAttrs (_: hasDefault: !hasDefault) (builtins.functionArgs f);
      stubs = builtins.mapAttrs (n: _: stub n) required;
    in
    if missing then
      throw "not read: ${toString fn}"
    else
      lib.callPackageWith (stubs // { inherit lib stdenv; } // extra) fn args;

  topCallPackage =
    fn: args:
    if builtins.isPath fn && baseNameOf (dirOf fn) == "llvm" then llvm else newScope { } fn args;

  python3Packages = (stub "python3Packages") // {
    callPackage = newScope { };
  };

  scopeArgs = builtins.functionArgs (import scopeFile);
  pkgsArgs =
    builtins.mapAttrs (n: _: stub n) (lib.filterAttrs (_: d: !d) scopeArgs)
    // {
      inherit lib newScope python3Packages;
      callPackage = topCallPackage;
      recurseIntoAttrs = x: x;
    };
  rocmPackages = import scopeFile (builtins.intersectAttrs scopeArgs pkgsArgs);

  # The release stand-in, as a prior overlay: documented by run.sh whenever it is used.
  standIn =
    if clrVersion == null then
      (_: _: { })
    else
      (_: prev: {
        rocmPackages = prev.rocmPackages.overrideScope (
          _: rprev: { clr = rprev.clr // { version = clrVersion; }; }
        );
      });

  pkgs = lib.fix (
    lib.extends (import overlayFile) (lib.extends standIn (_: { inherit rocmPackages; }))
  );

  # Each cmakeFlags element on its own, so one that needs an unread file does not hide the rest.
  show =
    v:
    let
      r = builtins.tryEval (builtins.deepSeq v v);
    in
    if r.success then r.value else "<not evaluable here: needs a file that was not read>";

  report =
    name:
    let
      d = pkgs.rocmPackages.${name};
      version = builtins.tryEval d.version;
    in
    if !version.success then
      {
        evaluated = false;
      }
    else
      {
        evaluated = true;
        version = version.value;
        cmakeFlags = map show (d.cmakeFlags or [ ]);
        broken = show (d.meta.broken or false);
      }
      // lib.optionalAttrs (d ? anyGfx9Target) { anyGfx9Target = show d.anyGfx9Target; }
      // lib.optionalAttrs (d ? anyMfmaTarget) { anyMfmaTarget = show d.anyMfmaTarget; }
      // lib.optionalAttrs (d ? gpuTargets) { gpuTargets = show d.gpuTargets; };
in
{
  clr = pkgs.rocmPackages.clr.version;
  packages = lib.genAttrs attrs report;
}
