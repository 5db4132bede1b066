import BLEProfiles
import Testing

@Suite struct LEDPianoCodecTests {
    @Test func noteMessagesBothWays() throws {
        #expect(try MIDIMessage(bytes: [0x90, 60, 100]) == .noteOn(channel: 0, note: 60, velocity: 100))
        #expect(try MIDIMessage(bytes: [0x9F, 0x7F, 0x7F]) == .noteOn(channel: 15, note: 127, velocity: 127))
        #expect(try MIDIMessage(bytes: [0x83, 60, 64]) == .noteOff(channel: 3, note: 60, velocity: 64))
        // Note-on with velocity 0 is a note-off.
        #expect(try MIDIMessage(bytes: [0x92, 61, 0]) == .noteOff(channel: 2, note: 61, velocity: 0))
        #expect(MIDIMessage.noteOn(channel: 5, note: 64, velocity: 90).bytes == [0x95, 64, 90])
        #expect(MIDIMessage.noteOff(channel: 0, note: 64, velocity: 0).bytes == [0x80, 64, 0])
        #expect(MIDIMessage.noteOff(channel: 0, note: 64, velocity: 0).note == 64)
        #expect(try MIDIMessage.messages(in: [0x90, 60, 100, 0x80, 60, 0]) == [.noteOn(channel: 0, note: 60, velocity: 100), .noteOff(channel: 0, note: 60, velocity: 0)])
    }

    @Test func otherMessagesAreTypedErrors() {
        for status: UInt8 in [0xA0, 0xB0, 0xC0, 0xE0, 0xF0, 0xF8, 0x3C, 0x00] {
            #expect(throws: WireError.self) { try MIDIMessage(bytes: [status, 60, 100]) }
            do { _ = try MIDIMessage(bytes: [status, 60, 100]) } catch { #expect(error.code == .unknownType) }
        }
        for bad: [UInt8] in [[], [0x90], [0x90, 60], [0x90, 60, 100, 0], [0x90, 0x80, 1], [0x90, 1, 0x80]] {
            #expect(throws: WireError.self) { try MIDIMessage(bytes: bad) }
        }
        #expect(throws: WireError.self) { try MIDIMessage.messages(in: []) }
        #expect(throws: WireError.self) { try MIDIMessage.messages(in: [0x90, 60, 100, 0x80]) }
    }

    @Test func ledFramesBothWays() throws {
        for mode in PianoLEDFrame.Mode.allCases {
            for key: UInt8 in [0x00, 0x39, 0x72] {
                let frame = try PianoLEDFrame(key: key, mode: mode)
                #expect(frame.encoded == [0xF0, 0x3D, 0x3D, key, mode.rawValue, 0xF7])
                #expect(try PianoLEDFrame(bytes: [0xF0, 0x3D, 0x3D, key, mode.rawValue, 0xF7]) == frame)
            }
        }
        #expect(throws: WireError.self) { try PianoLEDFrame(key: 0x73, mode: .on) }
        let good: [UInt8] = [0xF0, 0x3D, 0x3D, 0x10, 0x01, 0xF7]
        for length in 0..<6 { #expect(throws: WireError.self) { try PianoLEDFrame(bytes: Array(good.prefix(length))) } }
        for (index, bad) in [(0, UInt8(0xF1)), (1, 0x3E), (2, 0x00), (3, 0x73), (3, 0xFF), (4, 0x03), (5, 0xF6)] {
            var bytes = good
            bytes[index] = bad
            #expect(throws: WireError.self, "byte \(index) = \(bad)") { try PianoLEDFrame(bytes: bytes) }
        }
        #expect(throws: WireError.self) { try PianoLEDFrame(bytes: good + [0]) }
    }
}
