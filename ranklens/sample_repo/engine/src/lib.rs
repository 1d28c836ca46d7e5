/// Parse a configuration file into key/value pairs.
pub fn parse_config(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| line.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

pub struct Matrix {
    rows: usize,
    cols: usize,
}

impl Matrix {
    /// Multiply two matrices.
    pub fn multiply(&self, other: &Matrix) -> Matrix {
        Matrix { rows: self.rows, cols: other.cols }
    }
}
