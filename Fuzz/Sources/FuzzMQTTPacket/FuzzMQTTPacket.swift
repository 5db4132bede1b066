import FuzzKit

// The libFuzzer executable of the FuzzMQTTPacket target (Targets/MQTTPacket.swift).
@_cdecl("FuzzMQTTPacket_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv, FuzzTargets.mqttPacket)
}
