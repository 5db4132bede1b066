import FuzzKit

// The libFuzzer executable of the FuzzESPHomeAPI target (Targets/ESPHomeAPI.swift).
@_cdecl("FuzzESPHomeAPI_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv, FuzzTargets.esphomeAPI)
}
