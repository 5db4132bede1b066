import BLEProtocols
import Testing

@Suite struct FIFOTests {
    @Test func keepsOrderAcrossCompaction() {
        var fifo = FIFO<Int>()
        var expected = 0
        var next = 0
        for round in 0..<50 {
            for _ in 0..<(round % 7 + 3) {
                fifo.append(next)
                next += 1
            }
            for _ in 0..<(round % 5 + 1) {
                #expect(fifo.popFirst() == expected)
                expected += 1
            }
        }
        while let value = fifo.popFirst() {
            #expect(value == expected)
            expected += 1
        }
        #expect(expected == next && fifo.isEmpty && fifo.count == 0)
    }
}
