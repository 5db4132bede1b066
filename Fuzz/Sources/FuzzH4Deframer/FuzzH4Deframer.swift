import FuzzKit

// The libFuzzer executable of the FuzzH4Deframer target (Targets/H4Deframer.swift).
@_cdecl("FuzzH4Deframer_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv, FuzzTargets.h4Deframer)
}
