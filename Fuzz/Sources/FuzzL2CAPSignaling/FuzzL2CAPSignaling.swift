import FuzzKit

// The libFuzzer executable of the FuzzL2CAPSignaling target (Targets/L2CAPSignaling.swift).
@_cdecl("FuzzL2CAPSignaling_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv, FuzzTargets.l2capSignaling)
}
