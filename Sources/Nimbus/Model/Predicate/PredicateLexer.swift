import NimbusProtocol

/// One token of a predicate format string, with the 1-based column it starts at.
struct PredicateToken: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        /// A bare word: a key or a keyword (keywords are matched case-insensitively).
        case word(String)
        /// `#word`: a key even when it spells a keyword.
        case escapedWord(String)
        /// A function selector, `distanceToLocation:fromLocation:`.
        case selector(String)
        /// A quoted string literal, unescaped.
        case string(String)
        /// A number literal: INT64 or DOUBLE.
        case number(FieldValue)
        /// A format specifier: `%@`, `%K`, `%d`, `%ld`, `%f`, … (`conversion` is its last character).
        case specifier(text: String, conversion: Character)
        /// `$name`, a substitution variable.
        case variable(String)
        /// `[cd]` after an operator (a modifier), or `[0]` after a key (a subscript).
        case brackets(String)
        /// Punctuation and operators: `==`, `<=`, `&&`, `(`, `,`, `.`, …
        case symbol(String)
        case end
    }

    var kind: Kind
    var column: Int

    /// The word, uppercased, when the token is a bare word (for keyword matching).
    var keyword: String? {
        if case .word(let word) = kind { return word.uppercased() }
        return nil
    }

    func isSymbol(_ symbol: String) -> Bool { kind == .symbol(symbol) }

    /// How the token reads in an error message.
    var quoted: String {
        switch kind {
        case .word(let word): return "'\(word)'"
        case .escapedWord(let word): return "'#\(word)'"
        case .selector(let selector): return "'\(selector)'"
        case .string(let string): return "the string '\(string)'"
        case .number: return "a number"
        case .specifier(let text, _): return "'\(text)'"
        case .variable(let name): return "'$\(name)'"
        case .brackets(let content): return "'[\(content)]'"
        case .symbol(let symbol): return "'\(symbol)'"
        case .end: return "the end of the predicate"
        }
    }
}

/// Splits a predicate format string into tokens. Quoted strings are taken verbatim: a `%@`
/// inside quotes is text, as in `NSPredicate`.
struct PredicateLexer {
    private let characters: [Character]
    private let format: String
    private var index = 0

    init(_ format: String) {
        self.format = format
        self.characters = Array(format)
    }

    static func tokens(of format: String) throws(PredicateFormatError) -> [PredicateToken] {
        var lexer = PredicateLexer(format)
        var tokens: [PredicateToken] = []
        while true {
            let token = try lexer.next()
            tokens.append(token)
            if token.kind == .end { return tokens }
        }
    }

    private static let twoCharacterSymbols: Set<String> = ["==", "!=", "<>", "<=", "=<", ">=", "=>", "&&", "||", "**"]
    private static let oneCharacterSymbols: Set<Character> = [
        "=", "<", ">", "!", "(", ")", "{", "}", ",", ".", "@", "+", "-", "*", "/", "&", "|",
    ]

    private func peek(_ offset: Int = 0) -> Character? {
        index + offset < characters.count ? characters[index + offset] : nil
    }

    private func error(_ reason: String, at column: Int, suggestion: String? = nil) -> PredicateFormatError {
        PredicateFormatError(.syntax, column: column, reason: reason, suggestion: suggestion, format: format)
    }

    mutating func next() throws(PredicateFormatError) -> PredicateToken {
        while let character = peek(), character.isWhitespace { index += 1 }
        let column = index + 1
        guard let character = peek() else { return PredicateToken(kind: .end, column: column) }
        func token(_ kind: PredicateToken.Kind) -> PredicateToken { PredicateToken(kind: kind, column: column) }

        if character.isLetter || character == "_" {
            let word = readWord()
            guard peek() == ":" else { return token(.word(word)) }
            var selector = word
            while peek() == ":" {
                selector.append(":")
                index += 1
                if let next = peek(), next.isLetter { selector += readWord() }
            }
            return token(.selector(selector))
        }
        if character == "#" {
            index += 1
            guard let next = peek(), next.isLetter || next == "_" else {
                throw error("'#' must be followed by a key name", at: column)
            }
            return token(.escapedWord(readWord()))
        }
        if character == "'" || character == "\"" {
            return token(.string(try readString(quote: character, column: column)))
        }
        if character.isASCII && character.isNumber || character == "." && peek(1)?.isNumber == true {
            return token(.number(try readNumber(column: column)))
        }
        if character == "%" {
            return try readSpecifier(column: column)
        }
        if character == "$" {
            index += 1
            guard let next = peek(), next.isLetter || next == "_" else {
                throw error("'$' must be followed by a variable name", at: column)
            }
            return token(.variable(readWord()))
        }
        if character == "[" {
            index += 1
            var content = ""
            while let next = peek(), next != "]" {
                content.append(next)
                index += 1
            }
            guard peek() == "]" else { throw error("'[' is never closed with ']'", at: column) }
            index += 1
            return token(.brackets(content))
        }
        if let second = peek(1), Self.twoCharacterSymbols.contains(String([character, second])) {
            index += 2
            return token(.symbol(String([character, second])))
        }
        if Self.oneCharacterSymbols.contains(character) {
            index += 1
            return token(.symbol(String(character)))
        }
        throw error("unexpected character '\(character)'", at: column)
    }

    private mutating func readWord() -> String {
        var word = ""
        while let character = peek(), character.isLetter || character.isNumber || character == "_" {
            word.append(character)
            index += 1
        }
        return word
    }

    private mutating func readString(quote: Character, column: Int) throws(PredicateFormatError) -> String {
        index += 1
        var text = ""
        while let character = peek() {
            index += 1
            if character == quote { return text }
            guard character == "\\" else {
                text.append(character)
                continue
            }
            guard let escaped = peek() else { break }
            index += 1
            switch escaped {
            case "n": text.append("\n")
            case "t": text.append("\t")
            case "r": text.append("\r")
            case "0": text.append("\0")
            case "u":
                let hex = String(characters[index..<min(index + 4, characters.count)])
                guard hex.count == 4, let scalar = UInt32(hex, radix: 16).flatMap(Unicode.Scalar.init) else {
                    throw error("'\\u' must be followed by four hexadecimal digits", at: index - 1)
                }
                text.unicodeScalars.append(scalar)
                index += 4
            default: text.append(escaped)
            }
        }
        throw error("the string starting here is never closed with \(quote)", at: column)
    }

    private mutating func readNumber(column: Int) throws(PredicateFormatError) -> FieldValue {
        if peek() == "0", let x = peek(1), x == "x" || x == "X" {
            index += 2
            var digits = ""
            while let character = peek(), character.isHexDigit {
                digits.append(character)
                index += 1
            }
            guard let value = Int64(digits, radix: 16) else {
                throw error("'0x\(digits)' is not a 64-bit hexadecimal integer", at: column)
            }
            return .int64(value)
        }
        var text = ""
        var isInteger = true
        func readDigits() {
            while let character = peek(), character.isASCII, character.isNumber {
                text.append(character)
                index += 1
            }
        }
        readDigits()
        if peek() == ".", peek(1)?.isNumber == true || !text.isEmpty && peek(1)?.isLetter != true {
            isInteger = false
            if text.isEmpty { text = "0" }
            text.append(".")
            index += 1
            readDigits()
        }
        if let e = peek(), e == "e" || e == "E",
            peek(1)?.isNumber == true || (peek(1) == "-" || peek(1) == "+") && peek(2)?.isNumber == true
        {
            isInteger = false
            text.append("e")
            index += 1
            if let sign = peek(), sign == "-" || sign == "+" {
                text.append(sign)
                index += 1
            }
            readDigits()
        }
        if isInteger {
            guard let value = Int64(text) else { throw error("\(text) does not fit in a 64-bit integer", at: column) }
            return .int64(value)
        }
        guard let value = Double(text), value.isFinite else { throw error("'\(text)' is not a number", at: column) }
        return .double(value)
    }

    private mutating func readSpecifier(column: Int) throws(PredicateFormatError) -> PredicateToken {
        index += 1
        var text = "%"
        while let modifier = peek(), "lqhzjt".contains(modifier) {
            text.append(modifier)
            index += 1
        }
        guard let conversion = peek() else {
            throw error("'\(text)' ends the predicate without a conversion (%@, %K, %d, %f)", at: column)
        }
        text.append(conversion)
        index += 1
        let valid = text.count == 2 && (conversion == "@" || conversion == "K") || "diufeEgG".contains(conversion)
        guard valid else {
            throw error(
                "'\(text)' is not a predicate format specifier", at: column,
                suggestion: "use %@ for values, %K for key names, %d for integers and %f for numbers")
        }
        return PredicateToken(kind: .specifier(text: text, conversion: conversion), column: column)
    }
}
