//! Pod addresses on the node's subnet: the first host address is the gateway (the bridge), pods
//! get the lowest free address after it, and freed addresses are handed out again.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::NetError;

/// The address book of one subnet.
#[derive(Debug, Clone)]
pub struct Ipam {
    subnet: Ipv4Net,
    used: BTreeSet<Ipv4Addr>,
}

impl Ipam {
    /// An empty book for `subnet` (truncated to its network); it needs room for the gateway
    /// and at least one pod (a prefix of /30 or shorter).
    pub fn new(subnet: Ipv4Net) -> Result<Ipam, NetError> {
        if subnet.prefix_len() > 30 {
            return Err(NetError::Config {
                problem: format!("the subnet {subnet} has no room for a gateway and a pod"),
                fix: "use a prefix of /30 or shorter, e.g. /24".into(),
            });
        }
        Ok(Ipam {
            subnet: subnet.trunc(),
            used: BTreeSet::new(),
        })
    }

    /// The subnet.
    pub fn subnet(&self) -> Ipv4Net {
        self.subnet
    }

    /// The gateway: the first host address.
    pub fn gateway(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.subnet.network()).saturating_add(1))
    }

    /// The position of `addr` in the subnet (0 is the network address).
    pub fn slot(&self, addr: Ipv4Addr) -> u32 {
        u32::from(addr).saturating_sub(u32::from(self.subnet.network()))
    }

    /// The highest slot a pod can have.
    pub fn max_slot(&self) -> u32 {
        self.slot(self.subnet.broadcast()).saturating_sub(1)
    }

    /// Takes the lowest free pod address.
    pub fn allocate(&mut self) -> Result<Ipv4Addr, NetError> {
        let first = u32::from(self.gateway()).saturating_add(1);
        let last = u32::from(self.subnet.broadcast()).saturating_sub(1);
        for n in first..=last {
            let addr = Ipv4Addr::from(n);
            if !self.used.contains(&addr) {
                self.used.insert(addr);
                return Ok(addr);
            }
        }
        Err(NetError::Exhausted {
            subnet: self.subnet.to_string(),
            used: self.used.len(),
        })
    }

    /// Gives `addr` back; whether it was taken.
    pub fn release(&mut self, addr: Ipv4Addr) -> bool {
        self.used.remove(&addr)
    }

    /// How many addresses are taken.
    pub fn in_use(&self) -> usize {
        self.used.len()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn pods_get_the_lowest_free_address_after_the_gateway_and_freed_ones_come_back() {
        let mut ipam = Ipam::new("10.213.0.0/29".parse().unwrap()).unwrap();
        assert_eq!(ipam.gateway(), Ipv4Addr::new(10, 213, 0, 1));
        let a = ipam.allocate().unwrap();
        let b = ipam.allocate().unwrap();
        assert_eq!(
            (a, b),
            (Ipv4Addr::new(10, 213, 0, 2), Ipv4Addr::new(10, 213, 0, 3))
        );
        assert!(ipam.release(a));
        assert!(!ipam.release(a));
        assert_eq!(ipam.allocate().unwrap(), a);
        assert_eq!(ipam.slot(b), 3);
        assert_eq!(ipam.max_slot(), 6);
    }

    #[test]
    fn a_full_subnet_says_so_and_the_broadcast_address_is_never_given() {
        let mut ipam = Ipam::new("10.213.0.0/30".parse().unwrap()).unwrap();
        assert_eq!(ipam.allocate().unwrap(), Ipv4Addr::new(10, 213, 0, 2));
        let err = ipam.allocate().unwrap_err();
        assert!(err.to_string().contains("no free address"), "{err}");
        assert!(Ipam::new("10.213.0.0/31".parse().unwrap()).is_err());
    }

    #[test]
    fn a_subnet_with_host_bits_is_taken_as_its_network() {
        let ipam = Ipam::new("10.213.0.77/24".parse().unwrap()).unwrap();
        assert_eq!(ipam.subnet().to_string(), "10.213.0.0/24");
        assert_eq!(ipam.gateway(), Ipv4Addr::new(10, 213, 0, 1));
    }
}
