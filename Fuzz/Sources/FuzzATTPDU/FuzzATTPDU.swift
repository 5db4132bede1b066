import FuzzKit

// The libFuzzer executable of the FuzzATTPDU target (Targets/ATTPDU.swift).
@_cdecl("FuzzATTPDU_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv, FuzzTargets.attPDU)
}
