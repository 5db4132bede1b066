import FuzzKit

// The libFuzzer executable of the FuzzATTServer target (Targets/ATTServer.swift).
@_cdecl("FuzzATTServer_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv, FuzzTargets.attServer)
}
