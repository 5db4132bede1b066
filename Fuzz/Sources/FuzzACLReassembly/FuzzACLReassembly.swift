import FuzzKit

// The libFuzzer executable of the FuzzACLReassembly target (Targets/ACLReassembly.swift).
@_cdecl("FuzzACLReassembly_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv, FuzzTargets.aclReassembly)
}
