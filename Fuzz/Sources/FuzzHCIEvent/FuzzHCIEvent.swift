import FuzzKit

// The libFuzzer executable of the FuzzHCIEvent target (Targets/HCIEvent.swift).
@_cdecl("FuzzHCIEvent_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv, FuzzTargets.hciEvent)
}
