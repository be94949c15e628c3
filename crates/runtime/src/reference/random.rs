//! `RandomUniform` and `RandomNormal`: seeded, reproducible draws ([`RandomFill`]).

use graphlift_ir::{Distribution as Drawn, ElementType, RandomFill, TensorData};
use rand::distr::{Distribution, Uniform};
use rand::rngs::Xoshiro256PlusPlus;
use rand::SeedableRng;
use rand_distr::Normal;

/// The elements of `fill`: draw `i` of `Xoshiro256PlusPlus::seed_from_u64(seed)` through
/// `rand_distr`'s `Uniform` or `Normal` in `f64`, rounded to the element type (a uniform
/// draw just below `high` may round to `high` in `f32`).
///
/// # Errors
/// The attributes' error ([`RandomFill::check`]) for a fill that inference would refuse.
pub fn random(fill: &RandomFill) -> Result<TensorData, String> {
    fill.check()?;
    let n = fill.shape.element_count().map_err(|e| e.to_string())?;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(fill.seed);
    let draws: Vec<f64> = match fill.distribution {
        Drawn::Uniform { low, high } => {
            let d = Uniform::new(low, high).map_err(|e| format!("uniform: {e}"))?;
            (0..n).map(|_| d.sample(&mut rng)).collect()
        }
        Drawn::Normal { mean, scale } => {
            let d = Normal::new(mean, scale).map_err(|e| format!("normal: {e}"))?;
            (0..n).map(|_| d.sample(&mut rng)).collect()
        }
    };
    Ok(match fill.element_type {
        ElementType::F32 => TensorData::F32(draws.into_iter().map(|x| x as f32).collect()),
        _ => TensorData::F64(draws),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphlift_ir::Shape;

    fn fill(distribution: Drawn, element_type: ElementType, seed: u64) -> RandomFill {
        RandomFill {
            distribution,
            element_type,
            shape: Shape::new(vec![100, 1000]),
            seed,
        }
    }

    fn draws(f: &RandomFill) -> Vec<f64> {
        match random(f).unwrap() {
            TensorData::F32(v) => v.into_iter().map(f64::from).collect(),
            TensorData::F64(v) => v,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn draws_follow_their_distribution_and_their_seed() {
        let uniform = Drawn::Uniform {
            low: -2.0,
            high: 3.0,
        };
        let u = draws(&fill(uniform, ElementType::F64, 7));
        assert!(u.iter().all(|&x| (-2.0..3.0).contains(&x)));
        let mean = u.iter().sum::<f64>() / u.len() as f64;
        assert!((mean - 0.5).abs() < 0.02, "{mean}");
        let normal = Drawn::Normal {
            mean: 1.0,
            scale: 0.5,
        };
        let g = draws(&fill(normal, ElementType::F32, 7));
        let mean = g.iter().sum::<f64>() / g.len() as f64;
        let var = g.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / g.len() as f64;
        assert!(
            (mean - 1.0).abs() < 0.01 && (var - 0.25).abs() < 0.01,
            "{mean} {var}"
        );
        // The same seed gives the same values; another seed others.
        assert_eq!(g, draws(&fill(normal, ElementType::F32, 7)));
        assert_ne!(g, draws(&fill(normal, ElementType::F32, 8)));
    }

    #[test]
    fn bad_attributes_are_refused() {
        let bad = [
            (
                Drawn::Uniform {
                    low: 1.0,
                    high: 1.0,
                },
                ElementType::F32,
            ),
            (
                Drawn::Uniform {
                    low: 0.0,
                    high: f64::INFINITY,
                },
                ElementType::F32,
            ),
            (
                Drawn::Normal {
                    mean: 0.0,
                    scale: -1.0,
                },
                ElementType::F64,
            ),
            (
                Drawn::Normal {
                    mean: 0.0,
                    scale: 1.0,
                },
                ElementType::I32,
            ),
        ];
        for (d, t) in bad {
            assert!(random(&fill(d, t, 0)).is_err(), "{d:?} {t}");
        }
    }
}
