import FuzzKit

// The libFuzzer executable of the FuzzSMPPairing target (Targets/SMPPairing.swift).
@_cdecl("FuzzSMPPairing_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv, FuzzTargets.smpPairing)
}
