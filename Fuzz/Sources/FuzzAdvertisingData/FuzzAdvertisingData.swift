import FuzzKit

// The libFuzzer executable of the FuzzAdvertisingData target (Targets/AdvertisingData.swift).
@_cdecl("FuzzAdvertisingData_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv, FuzzTargets.advertisingData)
}
