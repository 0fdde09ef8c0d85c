// Generator of offline kubeconform schemas for kneewatch's chart tests
// (`make tools`); its own module so the main module stays free of it.
module github.com/kneewatch/kneewatch/tools/k8sschema

go 1.26.8

require go.yaml.in/yaml/v3 v3.0.6
