/// A file name as a stem and an extension, the way the Finder and the Files app split it to
/// add a suffix (`"Report 2.pdf"`, `"Report (Conflict from iPad, …).pdf"`).
public enum NameParts {
    /// The stem and the extension with its period: `"a.tar.gz"` → `("a.tar", ".gz")`;
    /// `".profile"` and `"Makefile"` have no extension.
    public static func split(_ name: String) -> (stem: String, ext: String) {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return (name, "") }
        let ext = name[dot...]
        // "v1.0 final" has no extension: an extension is at least one character, without spaces.
        guard ext.count > 1, !ext.contains(" ") else { return (name, "") }
        return (String(name[..<dot]), String(ext))
    }

    /// `name` with `suffix` added to its stem: `("Report.pdf", " 2")` → `"Report 2.pdf"`.
    public static func adding(_ suffix: String, to name: String) -> String {
        let (stem, ext) = split(name)
        return stem + suffix + ext
    }
}
