import FuzzKit

// The libFuzzer executable of the FuzzSMPPDU target (Targets/SMPPDU.swift).
@_cdecl("FuzzSMPPDU_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv, FuzzTargets.smpPDU)
}
