import FuzzKit

// The libFuzzer executable of the FuzzGATTClient target (Targets/GATTClient.swift).
@_cdecl("FuzzGATTClient_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv, FuzzTargets.gattClient)
}
