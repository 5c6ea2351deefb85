/// A raster of palette indices to draw charts on: lines, rectangles and 5×7 text; written
/// out as a PNG by ``PNGEncoder``.
struct Canvas {
    let width: Int
    let height: Int
    private(set) var pixels: [UInt8]

    init(width: Int, height: Int, background: UInt8 = 0) {
        self.width = width
        self.height = height
        pixels = Array(repeating: background, count: width * height)
    }

    mutating func set(_ x: Int, _ y: Int, _ color: UInt8) {
        guard x >= 0, y >= 0, x < width, y < height else { return }
        pixels[y * width + x] = color
    }

    mutating func fill(x: Int, y: Int, width w: Int, height h: Int, _ color: UInt8) {
        for row in y..<(y + h) { for column in x..<(x + w) { set(column, row, color) } }
    }

    /// A line `thickness` pixels wide (Bresenham); with `dash`, drawn `dash` pixels on and off.
    mutating func line(from a: (Int, Int), to b: (Int, Int), _ color: UInt8, thickness: Int = 1, dash: Int? = nil) {
        var (x, y) = a
        let dx = abs(b.0 - x)
        let dy = -abs(b.1 - y)
        let sx = x < b.0 ? 1 : -1
        let sy = y < b.1 ? 1 : -1
        var error = dx + dy
        var step = 0
        while true {
            if dash.map({ (step / $0) % 2 == 0 }) ?? true {
                for ox in 0..<thickness { for oy in 0..<thickness { set(x + ox - thickness / 2, y + oy - thickness / 2, color) } }
            }
            step += 1
            if x == b.0 && y == b.1 { break }
            let doubled = 2 * error
            if doubled >= dy { error += dy; x += sx }
            if doubled <= dx { error += dx; y += sy }
        }
    }

    /// `text` with its top-left corner at (x, y), each font pixel `scale` pixels wide.
    mutating func text(_ text: String, x: Int, y: Int, _ color: UInt8, scale: Int = 1) {
        var cursor = x
        for character in text {
            let rows = PixelFont.rows(character)
            for (row, bits) in rows.enumerated() {
                for column in 0..<PixelFont.width where bits & (1 << (PixelFont.width - 1 - column)) != 0 {
                    fill(x: cursor + column * scale, y: y + row * scale, width: scale, height: scale, color)
                }
            }
            cursor += (PixelFont.width + 1) * scale
        }
    }

    static func textWidth(_ text: String, scale: Int = 1) -> Int { text.count * (PixelFont.width + 1) * scale - scale }
}
