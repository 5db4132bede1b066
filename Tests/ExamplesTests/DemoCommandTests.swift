import Foundation
import Testing

/// `ble demo`, the README's first command, run as a process: the narrated session goes through every step, and each
/// refusal it shows says why (a newcomer must not read the MITM-only characteristic's refusal as a bug).
@Suite(.timeLimit(.minutes(2))) struct DemoCommandTests {
    @Test func theNarratedSessionRunsEveryStepAndExplainsItsRefusal() async throws {
        let demo = try DemoProcess("ble", arguments: ["demo"], hci: nil)
        let (status, lines) = await demo.finish(timeout: .seconds(60))
        #expect(status == 0, "\(lines)")
        func saw(_ text: String) -> Bool { lines.contains { $0.contains(text) } }
        #expect(saw("[central   ] found SwiftBLELab"), "\(lines)")
        #expect(saw("[central   ] discovered 6 services"), "\(lines)")
        // The encrypted characteristic: Just Works meets it, on demand.
        #expect(saw("[central   ] paired (the read was refused for security): Just Works"), "\(lines)")
        #expect(saw("read 12345678-1234-5678-1234-56789ABCDEF3: \"top-secret\""), "\(lines)")
        // The authenticated one: refused, and the narration says why and what meets it.
        let refusal = try #require(lines.first { $0.contains("pairing refused, as expected") }, "\(lines)")
        #expect(refusal.contains("IO capability NoInputNoOutput"))
        #expect(refusal.contains("Authentication Requirements (0x03)"))
        #expect(refusal.contains("ble pair --io keyboard --mitm"))
        #expect(!saw("[central   ] pairing failed"), "no unexplained pairing failure: \(lines)")
        #expect(saw("[central   ] heart rate notification #3"), "\(lines)")
        #expect(saw("[central   ] disconnected"), "\(lines)")
        #expect(lines.last?.hasPrefix("done: every step above crossed the virtual controllers") == true, "\(lines)")
    }
}
