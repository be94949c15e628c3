//! A pretty printer for the JSON format that keeps arrays of scalars on one line, so a shape
//! or a large constant does not take one line per element as with serde_json's
//! `PrettyFormatter`.

use std::io::{self, Write};

use serde_json::ser::{CompactFormatter, Formatter};

/// A `serde_json` formatter that indents objects, and arrays of objects or arrays, like
/// `PrettyFormatter` (two spaces), but writes an array whose elements are scalars inline:
/// `"shape": [2, 3]`. (`PrettyFormatter` puts every array element on its own line, so a
/// shape takes four lines and a constant of 10,000 elements takes 10,000.)
#[derive(Debug, Default)]
pub(super) struct Pretty {
    /// Nesting depth (for indentation).
    depth: usize,
    /// One entry per open array or object: whether a line break was written inside it.
    open: Vec<bool>,
    /// `Some(first)` between the start of an array element and its first byte.
    pending: Option<bool>,
}

impl Pretty {
    fn newline<W: ?Sized + Write>(&self, w: &mut W) -> io::Result<()> {
        w.write_all(b"\n")?;
        for _ in 0..self.depth {
            w.write_all(b"  ")?;
        }
        Ok(())
    }

    /// An array element that is a scalar: `, ` before it unless it is the first.
    fn scalar<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        if let Some(first) = self.pending.take() {
            if !first {
                w.write_all(b" ")?;
            }
        }
        Ok(())
    }

    /// An array element that is a container: it goes on its own line.
    fn container<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        if self.pending.take().is_some() {
            if let Some(broken) = self.open.last_mut() {
                *broken = true;
            }
            self.newline(w)?;
        }
        Ok(())
    }

    fn open<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.container(w)?;
        self.depth += 1;
        self.open.push(false);
        w.write_all(bracket)
    }

    fn close<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.depth = self.depth.saturating_sub(1);
        if self.open.pop().unwrap_or(false) {
            self.newline(w)?;
        }
        w.write_all(bracket)
    }
}

macro_rules! scalars {
    ($($method:ident($t:ty);)*) => {
        $(
            fn $method<W: ?Sized + Write>(&mut self, w: &mut W, value: $t) -> io::Result<()> {
                self.scalar(w)?;
                CompactFormatter.$method(w, value)
            }
        )*
    };
}

impl Formatter for Pretty {
    scalars! {
        write_bool(bool);
        write_i8(i8);
        write_i16(i16);
        write_i32(i32);
        write_i64(i64);
        write_i128(i128);
        write_u8(u8);
        write_u16(u16);
        write_u32(u32);
        write_u64(u64);
        write_u128(u128);
        write_f32(f32);
        write_f64(f64);
        write_number_str(&str);
        write_raw_fragment(&str);
    }

    fn write_null<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.scalar(w)?;
        CompactFormatter.write_null(w)
    }

    fn begin_string<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.scalar(w)?;
        CompactFormatter.begin_string(w)
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        self.pending = Some(first);
        Ok(())
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        if let Some(broken) = self.open.last_mut() {
            *broken = true;
        }
        self.newline(w)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde::Serialize;
    use serde_json::json;

    use super::Pretty;

    fn render(v: &serde_json::Value) -> String {
        let mut out = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(&mut out, Pretty::default());
        v.serialize(&mut ser).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn scalar_arrays_inline_containers_indented() {
        let v = json!({"a": [1, 2], "b": [], "c": {}, "d": [{"x": ["s", null]}, [true]]});
        let expected = r#"{
  "a": [1, 2],
  "b": [],
  "c": {},
  "d": [
    {
      "x": ["s", null]
    },
    [true]
  ]
}"#;
        assert_eq!(render(&v), expected);
        let back: serde_json::Value = serde_json::from_str(&render(&v)).unwrap();
        assert_eq!(back, v);
    }
}
