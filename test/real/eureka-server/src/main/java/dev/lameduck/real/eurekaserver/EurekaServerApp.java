package dev.lameduck.real.eurekaserver;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.cloud.netflix.eureka.server.EnableEurekaServer;

/** The stock Netflix Eureka server; every timing comes from application.properties or the command line. */
@SpringBootApplication
@EnableEurekaServer
public class EurekaServerApp {
  public static void main(String[] args) {
    SpringApplication.run(EurekaServerApp.class, args);
  }
}
