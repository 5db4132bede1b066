import BLEWire
import Testing

@Suite struct SmallMapTests {
    @Test func insertsFindsChangesAndRemoves() {
        var map = SmallMap<Int, String>()
        #expect(map.isEmpty && map.count == 0 && map[1] == nil)
        map[1] = "a"
        map[2] = "b"
        map[3] = "c"
        #expect(map.count == 3 && map[2] == "b" && map.contains(3) && !map.contains(4))
        map[2] = "B"
        #expect(map[2] == "B" && map.count == 3)
        map[2]? += "!"
        #expect(map[2] == "B!")
        map[4]? += "never"   // no entry: optional chaining changes nothing
        #expect(map[4] == nil && map.count == 3)
        #expect(map.removeValue(forKey: 1) == "a" && map.removeValue(forKey: 1) == nil)
        map[3] = nil
        #expect(map.count == 1 && map[3] == nil && map[2] == "B!")
        #expect(map.withValue(forKey: 2) { value -> Int in value += "?"; return value.count } == 3)
        #expect(map.withValue(forKey: 9) { _ in 0 } == nil)
        #expect(map[5, default: "x"] == "x" && map[5] == nil)
        map[5, default: "x"] += "y"
        #expect(map[5] == "xy")
        map.removeAll()
        #expect(map.isEmpty && map[2] == nil)
    }

    @Test func settingNilThroughAnAccessRemovesTheEntry() {
        var map = SmallMap<Int, Int>()
        for k in 0..<5 { map[k] = k * 10 }
        func clear(_ value: inout Int?) { value = nil }
        func set(_ value: inout Int?, _ new: Int) { value = new }
        clear(&map[1])   // through the subscript's in-place access, not its setter
        #expect(map.count == 4 && map[1] == nil && map.keys.sorted() == [0, 2, 3, 4])
        set(&map[7], 70)   // adds
        set(&map[3], 33)   // changes
        #expect(map[7] == 70 && map[3] == 33 && map[0] == 0 && map[4] == 40 && map.count == 5)
    }

    /// Insertion order; a removal moves the last entry into the removed one's place.
    @Test func orderIsInsertionOrderWithTheLastMovedIntoAGap() {
        var map = SmallMap<String, Int>()
        for (i, key) in ["a", "b", "c", "d", "e"].enumerated() { map[key] = i }
        #expect(map.keys == ["a", "b", "c", "d", "e"] && map.values == [0, 1, 2, 3, 4])
        map["b"] = nil
        #expect(map.keys == ["a", "e", "c", "d"] && map.values == [0, 4, 2, 3])
        #expect(map.map(\.key) == ["a", "e", "c", "d"] && map.map(\.value) == [0, 4, 2, 3])
        map["d"] = nil   // the last one: nothing moves
        #expect(map.keys == ["a", "e", "c"])
        var visited: [String] = []
        map.forEachInPlace { key, value in
            visited.append(key)
            value *= 10
        }
        #expect(visited == ["a", "e", "c"] && map.values == [0, 40, 20])
    }

    /// Values change where they are stored: an array inside one keeps its buffer (no copy-on-write) through each way in.
    @Test func changesInPlaceWithoutCopying() {
        var map = SmallMap<Int, [Int]>()
        for k in 0..<3 {
            var items: [Int] = []
            items.reserveCapacity(64)
            map[k] = items
        }
        func address(_ key: Int) -> UnsafeRawPointer? {
            map.withValue(forKey: key) { items in items.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) } } ?? nil
        }
        let before = address(1)
        #expect(before != nil)
        map[1]?.append(1)
        map.withValue(forKey: 1) { $0.append(2) }
        map[1, default: []].append(3)
        map.forEachInPlace { key, items in if key == 1 { items.append(4) } }
        #expect(map[1] == [1, 2, 3, 4] && address(1) == before)
        // The same past the linear size.
        for k in 3..<40 { map[k] = [] }
        let far = address(1)
        map[1]?.append(5)
        #expect(map[1] == [1, 2, 3, 4, 5] && address(1) == far)
    }

    /// Against a `Dictionary`, over a seeded run of insertions, changes and removals that crosses the linear size
    /// (16 entries) up and down many times.
    @Test func agreesWithADictionaryAcrossGrowthAndShrinking() {
        var map = SmallMap<UInt16, Int>()
        var reference: [UInt16: Int] = [:]
        var state: UInt64 = 0x5EED
        func next(_ bound: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(bound))
        }
        var largest = 0
        var phase = 0
        for step in 0..<20_000 {
            if step % 1_000 == 0 { phase += 1 }
            // Alternate phases that grow (mostly inserts) and shrink (mostly removals).
            let growing = phase % 2 == 1
            let key = UInt16(next(48))
            switch next(10) {
            case 0, 1, 2, 3:
                if growing || next(3) == 0 {
                    map[key] = step
                    reference[key] = step
                } else {
                    #expect(map.removeValue(forKey: key) == reference.removeValue(forKey: key))
                }
            case 4, 5:
                if growing {
                    map[key, default: 0] += 1
                    reference[key, default: 0] += 1
                } else {
                    map[key] = nil
                    reference[key] = nil
                }
            case 6:
                map[key]? += 7
                reference[key]? += 7
            case 7:
                #expect(map.withValue(forKey: key) { $0 -= 1; return $0 } == reference[key].map { $0 - 1 })
                reference[key]? -= 1
            default:
                #expect(map[key] == reference[key] && map.contains(key) == (reference[key] != nil))
            }
            largest = max(largest, map.count)
            #expect(map.count == reference.count)
        }
        #expect(largest > 40)
        for key in UInt16(0)..<48 { #expect(map[key] == reference[key], "key \(key)") }
        #expect(Dictionary(uniqueKeysWithValues: map.map { ($0.key, $0.value) }) == reference)
        #expect(Set(map.keys).count == map.count)
    }

    @Test func manyEntriesStayFindable() {
        var map = SmallMap<Int, Int>()
        for k in 0..<100 { map[k * 7] = k }
        #expect(map.count == 100 && (0..<100).allSatisfy { map[$0 * 7] == $0 } && map[1] == nil)
        for k in stride(from: 0, to: 100, by: 2) { map[k * 7] = nil }
        #expect(map.count == 50 && (0..<100).allSatisfy { map[$0 * 7] == ($0 % 2 == 1 ? $0 : nil) })
        for k in stride(from: 1, to: 95, by: 2) { map.removeValue(forKey: k * 7) }
        #expect(map.keys.sorted() == [95 * 7, 97 * 7, 99 * 7] && map[97 * 7] == 97)
        map[5] = 5
        #expect(map.count == 4 && map[5] == 5 && map[99 * 7] == 99)
    }
}
