//! Reading what an agent reads: one matcher per snapshot format, finding an element's ref by
//! its role and accessible name in the snapshot's text alone; and a point on a screenshot,
//! found by its colour, as an agent finds the red bar of a chart by looking.

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Format {
    /// Playwright MCP: `- button "Add to cart" [ref=e3]`, `- generic [ref=e7]: Add to cart`.
    Playwright,
    /// Ours: `[button e3] Add to cart`, `[textbox e5] Card number = "4242"`.
    Ours,
}

/// The ref of the first element in document order with this role and name.
pub(super) fn find_ref(format: Format, snapshot: &str, role: &str, name: &str) -> Option<String> {
    snapshot.lines().find_map(|line| {
        let (r, n, reference) = match format {
            Format::Playwright => playwright_line(line)?,
            Format::Ours => our_line(line)?,
        };
        (role_matches(format, role, &r) && n == name).then_some(reference)
    })
}

/// A task's role `generic` is an element with no ARIA role: Playwright calls it `generic`, and
/// ours prints such an element, when it has a ref, as what it is for (`clickable`, a short
/// `text` in a box of its own).
/// Role `any`: whatever the role, as an agent told only a name picks the first element of
/// that name.
fn role_matches(format: Format, wanted: &str, shown: &str) -> bool {
    match (format, wanted) {
        (_, "any") => true,
        (Format::Ours, "generic") => matches!(shown, "generic" | "clickable" | "text"),
        _ => wanted == shown,
    }
}

/// `- role "name" [attr] [ref=eN] …` or `- role [ref=eN]: inline text`: (role, name, ref). A
/// line YAML had to quote (a name with `: ` in it) comes as `- 'role "name" [ref=eN]': text`.
fn playwright_line(line: &str) -> Option<(String, String, String)> {
    let rest = line.trim_start().strip_prefix("- ")?;
    let unquoted;
    let rest = match rest.strip_prefix('\'') {
        Some(quoted) => {
            let (key, after) = yaml_single_quoted(quoted)?;
            unquoted = key + after;
            unquoted.as_str()
        }
        None => rest,
    };
    let role_end = rest.find([' ', ':']).unwrap_or(rest.len());
    let role = rest[..role_end].to_owned();
    let mut rest = rest[role_end..].trim_start();
    let mut name = None;
    if let Some(quoted) = rest.strip_prefix('"') {
        let (n, after) = quoted_string(quoted)?;
        name = Some(n);
        rest = after;
    }
    let at = rest.find("[ref=")?;
    let reference = rest[at + 5..].split(']').next()?.to_owned();
    let name = match name {
        Some(n) => n,
        // A nameless element's own text, after the colon.
        None => rest
            .rsplit_once("]: ")
            .map(|(_, t)| t.trim().trim_matches('"').to_owned())
            .unwrap_or_default(),
    };
    Some((role, name, reference))
}

/// The text of a JSON-style quoted string whose opening quote is gone, and what follows it.
fn quoted_string(s: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => out.push(chars.next()?.1),
            '"' => return Some((out, &s[i + 1..])),
            c => out.push(c),
        }
    }
    None
}

/// The text of a YAML single-quoted scalar whose opening quote is gone (`''` is a quote), and
/// what follows it.
fn yaml_single_quoted(s: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '\'' {
            out.push(c);
        } else if chars.peek().is_some_and(|&(_, n)| n == '\'') {
            out.push('\'');
            chars.next();
        } else {
            return Some((out, &s[i + 1..]));
        }
    }
    None
}

/// `[role ref] name = "value" (checked) options: … (disabled)`, indented in frames: (role,
/// name, ref); what follows the name is the element's state, not its name.
fn our_line(line: &str) -> Option<(String, String, String)> {
    let rest = line.trim_start().strip_prefix('[')?;
    let (head, tail) = rest.split_once(']')?;
    let (role, reference) = head.split_once(' ')?;
    let mut name = tail.trim();
    for cut in [" = \"", " options: "] {
        if let Some(at) = name.find(cut) {
            name = &name[..at];
        }
    }
    for suffix in [" (disabled)", " (checked)", " (unchecked)"] {
        name = name.strip_suffix(suffix).unwrap_or(name);
    }
    Some((
        role.to_owned(),
        name.trim().to_owned(),
        reference.to_owned(),
    ))
}

/// The centre, in image pixels, of the pixels within a few levels of `colour` (`#rrggbb`).
pub(super) fn at_colour(image: &[u8], colour: &str) -> Result<(f64, f64), String> {
    let hex = colour.trim_start_matches('#');
    let want: Vec<i32> = (0..3)
        .map(|i| i32::from_str_radix(&hex[i * 2..i * 2 + 2], 16).unwrap())
        .collect();
    let decoder = png::Decoder::new(std::io::Cursor::new(image));
    let mut reader = decoder
        .read_info()
        .map_err(|e| format!("the screenshot is not a PNG: {e}"))?;
    let mut buf = vec![0; reader.output_buffer_size().ok_or("a PNG too large")?];
    let info = reader
        .next_frame(&mut buf)
        .map_err(|e| format!("the screenshot's PNG: {e}"))?;
    let channels = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => return Err(format!("a PNG of {other:?}")),
    };
    if info.bit_depth != png::BitDepth::Eight {
        return Err(format!("a PNG of {:?} bits", info.bit_depth));
    }
    let (mut n, mut sx, mut sy) = (0u64, 0u64, 0u64);
    for y in 0..info.height as usize {
        let row = &buf[y * info.line_size..(y + 1) * info.line_size];
        for x in 0..info.width as usize {
            let p = &row[x * channels..x * channels + 3];
            if (0..3).all(|i| (p[i] as i32 - want[i]).abs() <= 6) {
                n += 1;
                sx += x as u64;
                sy += y as u64;
            }
        }
    }
    if n < 50 {
        return Err(format!(
            "nothing of {colour} in the {}x{} screenshot",
            info.width, info.height
        ));
    }
    Ok((sx as f64 / n as f64, sy as f64 / n as f64))
}

#[test]
fn each_format_finds_the_ref_by_role_and_name() {
    let pw = r#"- generic [ref=e1]:
  - heading "Shop" [level=1] [ref=e2]
  - generic [ref=e7] [cursor=pointer]: Add to cart
  - button "Pay 12.00 €" [ref=e9] [cursor=pointer]
  - checkbox "I agree to the terms" [checked] [ref=e11]
  - option "Say \"hi\"" [ref=e12]
  - 'button "Assignee: Ada''s" [ref=f10e6] [cursor=pointer]': Ada's ▾"#;
    let f = |role, name| find_ref(Format::Playwright, pw, role, name);
    assert_eq!(f("generic", "Add to cart").as_deref(), Some("e7"));
    assert_eq!(f("button", "Pay 12.00 €").as_deref(), Some("e9"));
    assert_eq!(
        f("checkbox", "I agree to the terms").as_deref(),
        Some("e11")
    );
    assert_eq!(f("option", "Say \"hi\"").as_deref(), Some("e12"));
    assert_eq!(f("button", "Assignee: Ada's").as_deref(), Some("f10e6"));
    assert_eq!(f("button", "Add to cart"), None);
    let ours = "# Shop\n[clickable e4] Add to cart\n[textbox e5] Card number = \"42\"\n[checkbox e6] I agree (checked)\n  [option f1e2] Bergen\nAdd to cart";
    let f = |role, name| find_ref(Format::Ours, ours, role, name);
    assert_eq!(f("generic", "Add to cart").as_deref(), Some("e4"));
    assert_eq!(f("textbox", "Card number").as_deref(), Some("e5"));
    assert_eq!(f("checkbox", "I agree").as_deref(), Some("e6"));
    assert_eq!(f("option", "Bergen").as_deref(), Some("f1e2"));
    assert_eq!(f("button", "Add to cart"), None);
}
